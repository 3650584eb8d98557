"""Every node resource of the platform's Terraform provider, replayed with the exact
bodies it sends (``tests/pipelines/provider_bodies.py``, from its source): create with
``generation_id`` 0, read back without drift (the same ``user_config``, any key order),
update with the ``generation_id`` read (a stale one is a 409), delete. Resources
tidegate does not take yet are refused with a 400 in the v3 error shape, never a 500.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from tests.conftest import AppClient
from tests.factories import AccountCtx, make_account, make_tenant
from tests.pipelines.factories import assert_v3_error, enable_throttle, make_pipeline
from tests.pipelines.provider_bodies import APPLIES, REFUSED, Resource
from tests.tail.test_live import _env


async def _account(client: AppClient) -> AccountCtx:
    return await make_account(client, await make_tenant(client.database_url))


def _body(resource: Resource, **extra: Any) -> dict[str, Any]:
    """``client.Source/Processor/Destination`` as the provider marshals it."""
    return {
        "type": resource.type,
        "title": "tf",
        "description": "from terraform",
        "inputs": [],
        "user_config": resource.user_config,
        "generation_id": 0,
        **extra,
    }


# Lists whose items the server gives an ``_output_name`` (a Go string the provider reads
# and finds among the node's outputs).
NAMED_ITEMS = {"route": "conditionals", "parse-sequentially": "parsers"}


def _without_rule_names(
    stored: list[dict[str, Any]], sent: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """A trace-sampling rule's ``_output_name`` (a name, not an output of the node): kept
    when sent, made distinct when sent empty. Takes it out of ``stored``; answers
    ``sent`` without it, to compare the rest."""
    names = [rule.pop("_output_name") for rule in stored]
    assert all(names), names
    assert len(set(names)) == len(names), names
    given = [rule["_output_name"] for rule in sent]
    assert [name for name, was in zip(names, given, strict=True) if was] == [g for g in given if g]
    return [{k: v for k, v in rule.items() if k != "_output_name"} for rule in sent]


def _read(data: dict[str, Any], resource: Resource, *, title: str) -> None:
    assert data["type"] == resource.type
    assert data["title"] == title
    stored = data["user_config"]
    items = NAMED_ITEMS.get(resource.type)
    if items is not None:
        outputs = {output["id"] for output in data["outputs"]}
        for item in stored[items]:
            assert f"{data['id']}.{item.pop('_output_name')}" in outputs
    expected = {**resource.user_config, **resource.computed}
    if resource.type == "trace-sampling" and "conditionals" in expected:
        expected["conditionals"] = _without_rule_names(
            stored["conditionals"], expected["conditionals"]
        )
    assert stored == expected, "drift: read back differs"


async def _walk(http: httpx.AsyncClient, account: AccountCtx, resource: Resource) -> None:
    """Create, read, update (and a stale update), delete, as the provider does."""
    if resource.type == "throttle":  # the platform's beta flag, on the account
        await enable_throttle(http, account)
    pipeline_id = await make_pipeline(http, account)
    base = f"/v3/pipeline/{pipeline_id}/{resource.segment}"
    created = await http.post(base, json=_body(resource), headers=account.headers)
    assert created.status_code == 201, f"{resource.name}: {created.text}"
    node = created.json()["data"]
    _read(node, resource, title="tf")
    assert node["generation_id"] == 0

    read = await http.get(f"{base}/{node['id']}", headers=account.headers)
    assert read.status_code == 200, read.text
    _read(read.json()["data"], resource, title="tf")

    update = _body(resource, id=node["id"], title="tf 2", generation_id=0)
    updated = await http.put(f"{base}/{node['id']}", json=update, headers=account.headers)
    assert updated.status_code == 200, f"{resource.name}: {updated.text}"
    _read(updated.json()["data"], resource, title="tf 2")
    assert updated.json()["data"]["generation_id"] == 1
    stale = await http.put(f"{base}/{node['id']}", json=update, headers=account.headers)
    assert stale.status_code == 409, stale.text

    deleted = await http.delete(f"{base}/{node['id']}", headers=account.headers)
    assert deleted.status_code in (200, 204), deleted.text
    gone = await http.get(f"{base}/{node['id']}", headers=account.headers)
    assert gone.status_code == 404


@pytest.mark.parametrize("resource", APPLIES, ids=[r.name for r in APPLIES])
async def test_provider_resource_applies_and_reads_back(
    client: AppClient, resource: Resource
) -> None:
    await _walk(client, await _account(client), resource)


async def test_every_provider_resource_over_a_live_server(
    client: AppClient, shared_live_server: Any
) -> None:
    """The same walk through a real ``tidegate serve`` over HTTP (the session's database
    of each backend), every resource in turn."""
    server = shared_live_server(env=_env(client))
    account = await _account(client)
    # Four walks at a time, as a provider applying a plan does (each resource its own
    # pipeline): one at a time, the walk waited on the server's round trips for 15 s.
    gate = asyncio.Semaphore(4)

    async def walk(http: httpx.AsyncClient, resource: Resource) -> None:
        async with gate:
            await _walk(http, account, resource)

    async with server.async_client() as http:
        await asyncio.gather(*(walk(http, resource) for resource in APPLIES))


@pytest.mark.parametrize("resource", REFUSED, ids=[r.name for r in REFUSED])
async def test_provider_resource_not_built_is_refused_clearly(
    client: AppClient, resource: Resource
) -> None:
    account = await _account(client)
    pipeline_id = await make_pipeline(client, account)
    response = await client.post(
        f"/v3/pipeline/{pipeline_id}/{resource.segment}",
        json=_body(resource),
        headers=account.headers,
    )
    body = assert_v3_error(response, 400)
    assert body["message"]
    for error in body["errors"]:
        assert error["instance_path"].startswith(("/type", "/user_config")), error

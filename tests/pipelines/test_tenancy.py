"""Another account's (or another enterprise's) pipelines, nodes, routes and keys answer
exactly as missing ones: 404 on every read, update and delete."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from tests.conftest import AppClient
from tests.factories import AccountCtx, make_account, make_tenant
from tests.pipelines.factories import (
    add_node,
    assert_v3_error,
    make_pipeline,
    make_route,
    source_with_route,
)

MISSING = "00000000-0000-0000-0000-000000000000"


@dataclass
class Owned:
    account: AccountCtx
    pipeline_id: str
    route_id: str
    source_id: str
    processor_id: str
    destination_id: str
    access_key_id: str
    signing_key_id: str


async def owned_resources(client: AppClient) -> Owned:
    account = await make_account(client, await make_tenant(client.database_url))
    pipeline_id = await make_pipeline(client, account)
    route_id, source_id = await source_with_route(client, account, pipeline_id)
    condition = {"field": ".a", "str_operator": "exists"}
    processor_id = await add_node(
        client,
        account,
        pipeline_id,
        "processor",
        {"type": "filter", "inputs": [source_id], "user_config": {"condition": condition}},
    )
    destination_id = await add_node(
        client, account, pipeline_id, "destination", {"type": "blackhole", "inputs": []}
    )
    access = await client.post(
        f"/v3/pipeline/gateway-route/{route_id}/access-key", json={}, headers=account.headers
    )
    signing = await client.put(
        f"/v3/pipeline/gateway-route/{route_id}/signing-key",
        json={"key": "a-signing-key-of-the-owner"},
        headers=account.headers,
    )
    return Owned(
        account=account,
        pipeline_id=pipeline_id,
        route_id=route_id,
        source_id=source_id,
        processor_id=processor_id,
        destination_id=destination_id,
        access_key_id=access.json()["data"]["id"],
        signing_key_id=signing.json()["data"]["id"],
    )


def requests(o: Owned) -> list[tuple[str, str, dict[str, Any] | None]]:
    p = f"/v3/pipeline/{o.pipeline_id}"
    r = f"/v3/pipeline/gateway-route/{o.route_id}"
    filter_config = {"condition": {"field": ".a", "str_operator": "exists"}}
    return [
        ("GET", p, None),
        ("PATCH", p, {"title": "stolen"}),
        ("DELETE", p, None),
        ("GET", f"{p}/source", None),
        ("POST", f"{p}/source", {"type": "http", "gateway_route_id": o.route_id}),
        ("GET", f"{p}/source/{o.source_id}", None),
        ("PATCH", f"{p}/source/{o.source_id}", {"title": "x"}),
        ("DELETE", f"{p}/source/{o.source_id}", None),
        ("GET", f"{p}/processor", None),
        ("POST", f"{p}/processor", {"type": "filter", "user_config": filter_config}),
        ("GET", f"{p}/processor/{o.processor_id}", None),
        ("PATCH", f"{p}/processor/{o.processor_id}", {"title": "x"}),
        ("DELETE", f"{p}/processor/{o.processor_id}", None),
        ("GET", f"{p}/destination", None),
        ("POST", f"{p}/destination", {"type": "blackhole"}),
        ("GET", f"{p}/destination/{o.destination_id}", None),
        ("PATCH", f"{p}/destination/{o.destination_id}", {"title": "x"}),
        ("DELETE", f"{p}/destination/{o.destination_id}", None),
        ("GET", r, None),
        ("PUT", r, {"title": "stolen"}),
        ("DELETE", r, None),
        ("GET", f"{r}/access-key", None),
        ("POST", f"{r}/access-key", {"type": "generated", "title": "x"}),
        ("DELETE", f"{r}/access-key/{o.access_key_id}", None),
        ("GET", f"{r}/signing-key", None),
        ("PUT", f"{r}/signing-key", {"key": "an-intruders-signing-key"}),
        ("DELETE", f"{r}/signing-key/{o.signing_key_id}", None),
    ]


@pytest.mark.parametrize("stranger", ["sibling account", "other enterprise"])
async def test_strangers_get_404_everywhere(client: AppClient, stranger: str) -> None:
    owned = await owned_resources(client)
    if stranger == "sibling account":
        intruder = await make_account(client, owned.account.tenant)
    else:
        intruder = await make_account(client, await make_tenant(client.database_url))

    for method, path, body in requests(owned):
        response = await client.request(method, path, json=body, headers=intruder.headers)
        error = assert_v3_error(response, 404)
        assert error["code"] == "ENOTFOUND", (method, path)
        missing_path = path.replace(owned.pipeline_id, MISSING).replace(owned.route_id, MISSING)
        missing = await client.request(method, missing_path, json=body, headers=intruder.headers)
        assert missing.status_code == 404
        # Answered exactly as a missing resource, apart from the id in the message.
        assert error["errors"] == missing.json()["errors"]

    # The intruder's lists show nothing of the owner's.
    assert (await client.get("/v3/pipeline", headers=intruder.headers)).json()["data"] == []
    routes = await client.get("/v3/pipeline/gateway-route", headers=intruder.headers)
    assert routes.json()["data"] == []

    # And nothing changed for the owner.
    mine = await client.get(f"/v3/pipeline/{owned.pipeline_id}", headers=owned.account.headers)
    assert mine.json()["data"]["title"] == "p"
    assert len(mine.json()["data"]["nodes"]) == 3
    keys = await client.get(
        f"/v3/pipeline/gateway-route/{owned.route_id}/signing-key",
        headers=owned.account.headers,
    )
    assert [k["id"] for k in keys.json()["data"]] == [owned.signing_key_id]


async def test_keys_are_addressed_under_their_own_route(client: AppClient) -> None:
    owned = await owned_resources(client)
    other_route = await make_route(client, owned.account)
    base = f"/v3/pipeline/gateway-route/{other_route}"
    for path in (
        f"{base}/access-key/{owned.access_key_id}",
        f"{base}/signing-key/{owned.signing_key_id}",
    ):
        assert_v3_error(await client.delete(path, headers=owned.account.headers), 404)


async def test_enterprise_key_must_act_as_an_account(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    for method, path in (("GET", "/v3/pipeline"), ("GET", "/v3/pipeline/gateway-route")):
        response = await client.request(method, path, headers=tenant.headers)
        assert_v3_error(response, 403)
    assert_v3_error(await client.get("/v3/pipeline"), 401)

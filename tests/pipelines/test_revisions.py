"""generation_id (optimistic concurrency), PUT, the platform's node paths and their
aliases, and publishing, on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

from tests.conftest import AppClient
from tests.factories import AccountCtx, make_account, make_tenant
from tests.pipelines.factories import (
    add_node,
    assert_v3_error,
    make_pipeline,
    publish,
    source_with_route,
)


async def new_account(client: AppClient) -> AccountCtx:
    return await make_account(client, await make_tenant(client.database_url))


async def test_node_generation_id_guards_updates(client: AppClient) -> None:
    account = await new_account(client)
    pipeline_id = await make_pipeline(client, account)
    created = await client.post(
        f"/v3/pipeline/{pipeline_id}/sink",
        json={"type": "blackhole", "title": "void", "description": "d", "generation_id": 0},
        headers=account.headers,
    )
    assert created.status_code == 201, created.text
    node = created.json()["data"]
    assert (node["generation_id"], node["description"], node["kind"]) == (0, "d", "destination")
    url = f"/v3/pipeline/{pipeline_id}/sink/{node['id']}"

    put = await client.put(
        url, json={"type": "blackhole", "title": "v2", "generation_id": 0}, headers=account.headers
    )
    assert put.status_code == 200, put.text
    # PUT replaces the whole node: the description not sent is cleared.
    assert (put.json()["data"]["generation_id"], put.json()["data"]["description"]) == (1, None)

    stale = await client.put(
        url, json={"type": "blackhole", "title": "v3", "generation_id": 0}, headers=account.headers
    )
    error = assert_v3_error(stale, 409)
    assert error["errors"][0]["keyword"] == "generation_id"
    assert error["errors"][0]["params"] == {"current": 1, "given": 0}
    stale_patch = await client.patch(
        url, json={"title": "v3", "generation_id": 7}, headers=account.headers
    )
    assert_v3_error(stale_patch, 409)
    # Nothing changed by the refused updates; a PATCH without generation_id is not checked.
    patched = await client.patch(url, json={"description": "again"}, headers=account.headers)
    assert patched.json()["data"]["title"] == "v2"
    assert patched.json()["data"]["generation_id"] == 2
    wrong_id = await client.put(
        url, json={"id": "another", "type": "blackhole"}, headers=account.headers
    )
    assert assert_v3_error(wrong_id, 400)["errors"][0]["instance_path"] == "/id"


async def test_pipeline_put_and_generation(client: AppClient) -> None:
    account = await new_account(client)
    created = await client.post(
        "/v3/pipeline",
        json={"title": "p", "origin": "terraform", "deploy_type": "saas", "deployment_groups": []},
        headers=account.headers,
    )
    data = created.json()["data"]
    assert (data["origin"], data["deploy_type"], data["deployment_groups"]) == (
        "terraform",
        "saas",
        [],
    )
    assert (data["generation_id"], data["published_revision"]) == (0, None)
    url = f"/v3/pipeline/{data['id']}"
    put = await client.put(
        url, json={"id": data["id"], "title": "q", "origin": "terraform"}, headers=account.headers
    )
    assert put.status_code == 200, put.text
    assert (put.json()["data"]["title"], put.json()["data"]["deploy_type"]) == ("q", None)
    assert put.json()["data"]["generation_id"] == 1
    assert_v3_error(
        await client.put(url, json={"title": "r", "generation_id": 0}, headers=account.headers),
        409,
    )
    assert_v3_error(await client.put(url, json={"origin": "x"}, headers=account.headers), 400)


async def test_aliases_reach_the_same_nodes(client: AppClient) -> None:
    account = await new_account(client)
    pipeline_id = await make_pipeline(client, account)
    _route, source_id = await source_with_route(client, account, pipeline_id)
    condition = {"field": ".a", "str_operator": "exists"}
    filter_id = await add_node(
        client,
        account,
        pipeline_id,
        "processor",
        {"type": "filter", "inputs": [source_id], "user_config": {"condition": condition}},
    )
    for segment in ("transform", "processor"):
        listed = await client.get(f"/v3/pipeline/{pipeline_id}/{segment}", headers=account.headers)
        assert [node["id"] for node in listed.json()["data"]] == [filter_id]
    wrong_kind = await client.get(
        f"/v3/pipeline/{pipeline_id}/sink/{filter_id}", headers=account.headers
    )
    assert_v3_error(wrong_kind, 404)


async def test_throttle_reads_its_dropped_output(client: AppClient) -> None:
    account = await new_account(client)
    response = await client.put(
        f"/v3/enterprise/account/{account.account_id}/features/throttle-processor",
        headers=account.tenant.headers,
    )
    assert response.status_code == 200
    pipeline_id = await make_pipeline(client, account)
    throttle = await client.post(
        f"/v3/pipeline/{pipeline_id}/transform",
        json={"type": "throttle", "user_config": {"threshold": 1, "window_ms": 1000}},
        headers=account.headers,
    )
    node = throttle.json()["data"]
    assert node["outputs"] == [{"id": f"{node['id']}.dropped", "label": "dropped"}]


async def publish_raw(
    client: AppClient, account: AccountCtx, pipeline_id: str, **params: Any
) -> Any:
    return await client.post(
        f"/v3/pipeline/{pipeline_id}/publish", params=params, json={}, headers=account.headers
    )


async def test_publish_refuses_loose_ends_unless_allowed(client: AppClient) -> None:
    account = await new_account(client)
    pipeline_id = await make_pipeline(client, account)
    _route, source_id = await source_with_route(client, account, pipeline_id)
    sink = await add_node(client, account, pipeline_id, "destination", {"type": "blackhole"})
    refused = await publish_raw(client, account, pipeline_id)
    error = assert_v3_error(refused, 400)
    assert error["context"] == "querystring"
    assert error["errors"][0]["keyword"] == "unconnected"
    assert sorted(error["errors"][0]["params"]["nodes"]) == sorted([source_id, sink])
    detail = await client.get(f"/v3/pipeline/{pipeline_id}", headers=account.headers)
    assert detail.json()["data"]["published_revision"] is None  # nothing published

    published = await publish(client, account, pipeline_id, allow=True)
    assert published["published_revision"] == published["revision"]
    assert published["published_at"] is not None

    await client.patch(
        f"/v3/pipeline/{pipeline_id}/sink/{sink}",
        json={"inputs": [source_id]},
        headers=account.headers,
    )
    connected = await publish_raw(client, account, pipeline_id)
    assert connected.status_code == 200, connected.text
    assert connected.json()["data"]["has_unpublished_changes"] is False
    # Another account's pipeline: exactly as a missing one.
    other = await new_account(client)
    assert_v3_error(await publish_raw(client, other, pipeline_id), 404)


async def test_route_names_outputs_the_provider_did_not(client: AppClient) -> None:
    """The Terraform provider sends a route's conditionals with a label and no
    output_name, and reads each one's ``_output_name`` and the node's outputs[]."""
    account = await new_account(client)
    pipeline_id = await make_pipeline(client, account)
    leaf = {"field": ".level", "str_operator": "equal", "value": "error", "negate": False}
    body = {
        "type": "route",
        "user_config": {
            "conditionals": [
                {"label": "Errors", "conditional": {"expressions": [leaf]}},
                {"label": "Errors", "conditional": {"expressions": [leaf]}},
                {"label": "", "conditional": {"expressions": [leaf]}},
            ]
        },
        "generation_id": 0,
    }
    created = await client.post(
        f"/v3/pipeline/{pipeline_id}/transform", json=body, headers=account.headers
    )
    assert created.status_code == 201, created.text
    node = created.json()["data"]
    names = [c["_output_name"] for c in node["user_config"]["conditionals"]]
    assert names == ["errors", "errors-2", "output-3"]
    assert [o["id"] for o in node["outputs"]] == [
        f"{node['id']}.{name}" for name in [*names, "_unmatched"]
    ]
    # The same body again (PUT, as the provider does): the same names.
    again = await client.put(
        f"/v3/pipeline/{pipeline_id}/transform/{node['id']}", json=body, headers=account.headers
    )
    assert [c["_output_name"] for c in again.json()["data"]["user_config"]["conditionals"]] == names
    # An output is an input like any node's.
    await add_node(
        client,
        account,
        pipeline_id,
        "destination",
        {"type": "blackhole", "inputs": [f"{node['id']}.errors-2", f"{node['id']}._unmatched"]},
    )

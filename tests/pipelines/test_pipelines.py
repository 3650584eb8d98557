"""Pipelines and their nodes over HTTP, on SQLite and on PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest
from tests.conftest import AppClient
from tests.factories import AccountCtx, make_account, make_tenant
from tests.pipelines.factories import (
    add_node,
    assert_envelope,
    assert_v3_error,
    make_pipeline,
    make_route,
    source_with_route,
)


async def new_account(client: AppClient) -> AccountCtx:
    return await make_account(client, await make_tenant(client.database_url))


async def revision(client: AppClient, account: AccountCtx, pipeline_id: str) -> int:
    response = await client.get(f"/v3/pipeline/{pipeline_id}", headers=account.headers)
    value: int = response.json()["data"]["revision"]
    return value


async def test_pipeline_crud(client: AppClient) -> None:
    account = await new_account(client)

    created = await client.post(
        "/v3/pipeline", json={"title": "Edge", "description": "d"}, headers=account.headers
    )
    assert created.status_code == 201
    data = assert_envelope(created.json(), type_="pipeline")
    assert data["title"] == "Edge"
    assert data["description"] == "d"
    assert data["account_id"] == account.account_id
    assert data["revision"] == 1
    assert data["nodes"] == []
    assert created.json()["meta"]["links"]["self"]["detail"] == {
        "method": "get",
        "uri": "/v3/pipeline/{pipeline_id}",
    }
    pipeline_id = data["id"]

    listed = await client.get("/v3/pipeline", headers=account.headers)
    assert [p["id"] for p in assert_envelope(listed.json(), type_="pipeline")] == [pipeline_id]

    patched = await client.patch(
        f"/v3/pipeline/{pipeline_id}", json={"description": None}, headers=account.headers
    )
    assert patched.status_code == 200
    assert patched.json()["data"]["description"] is None
    assert patched.json()["data"]["title"] == "Edge"
    # The pipeline's own fields are not part of the graph: its generation moves, the
    # draft's revision does not.
    assert patched.json()["data"]["revision"] == 1
    assert patched.json()["data"]["generation_id"] == 1

    renamed = await client.patch(
        f"/v3/pipeline/{pipeline_id}", json={"title": "Core"}, headers=account.headers
    )
    assert renamed.json()["data"]["title"] == "Core"

    deleted = await client.delete(f"/v3/pipeline/{pipeline_id}", headers=account.headers)
    assert deleted.status_code == 200
    assert deleted.json()["data"]["id"] == pipeline_id
    gone = await client.get(f"/v3/pipeline/{pipeline_id}", headers=account.headers)
    assert_v3_error(gone, 404)


@pytest.mark.parametrize(
    ("body", "keyword", "instance_path"),
    [
        ({}, "required", ""),
        ({"title": ""}, "minLength", "/title"),
        ({"title": "x" * 251}, "maxLength", "/title"),
        ({"title": 5}, "type", "/title"),
        ({"title": "a\x00b"}, "pattern", "/title"),
        ({"title": "x", "extra": 1}, "additionalProperties", ""),
    ],
)
async def test_pipeline_validation(
    client: AppClient, body: dict[str, Any], keyword: str, instance_path: str
) -> None:
    account = await new_account(client)
    response = await client.post("/v3/pipeline", json=body, headers=account.headers)
    error = assert_v3_error(response, 400)
    assert error["context"] == "body"
    assert error["errors"][0]["keyword"] == keyword
    assert error["errors"][0]["instance_path"] == instance_path


async def test_patch_title_null_is_refused(client: AppClient) -> None:
    account = await new_account(client)
    pipeline_id = await make_pipeline(client, account)
    response = await client.patch(
        f"/v3/pipeline/{pipeline_id}", json={"title": None}, headers=account.headers
    )
    error = assert_v3_error(response, 400)
    assert error["errors"][0]["instance_path"] == "/title"


async def test_gateway_route_path_is_not_a_pipeline_id(client: AppClient) -> None:
    account = await new_account(client)
    route_id = await make_route(client, account)
    response = await client.get("/v3/pipeline/gateway-route", headers=account.headers)
    assert response.status_code == 200
    assert [r["id"] for r in response.json()["data"]] == [route_id]


async def test_path_ids_are_bounded(client: AppClient) -> None:
    account = await new_account(client)
    too_long = await client.get("/v3/pipeline/" + "a" * 37, headers=account.headers)
    error = assert_v3_error(too_long, 400)
    assert error["context"] == "params"
    assert error["errors"][0]["instance_path"] == "/pipeline_id"
    nul = await client.get("/v3/pipeline/a%00b", headers=account.headers)
    assert_v3_error(nul, 400)


async def test_nodes_crud_and_revision(client: AppClient) -> None:
    account = await new_account(client)
    pipeline_id = await make_pipeline(client, account)
    base = f"/v3/pipeline/{pipeline_id}"
    route_id, source_id = await source_with_route(client, account, pipeline_id)
    assert await revision(client, account, pipeline_id) == 2

    source = await client.get(f"{base}/source/{source_id}", headers=account.headers)
    data = assert_envelope(source.json(), type_="source")
    assert data["kind"] == "source"
    assert data["type"] == "http"
    assert data["gateway_route_id"] == route_id
    assert data["inputs"] == []

    filter_body = {
        "type": "filter",
        "title": "only errors",
        "inputs": [source_id],
        "user_config": {
            "condition": {"field": ".level", "str_operator": "equal", "value": "error"}
        },
    }
    created = await client.post(f"{base}/processor", json=filter_body, headers=account.headers)
    assert created.status_code == 201
    processor = assert_envelope(created.json(), type_="processor")
    # Stored as sent (clients read back exactly what they wrote).
    assert processor["user_config"] == filter_body["user_config"]
    assert processor["title"] == "only errors"

    destination_id = await add_node(
        client,
        account,
        pipeline_id,
        "destination",
        {
            "type": "http",
            "inputs": [processor["id"]],
            "user_config": {
                "uri": "https://collector.example/ingest",
                "headers": {"X-Token": "abc"},
                "batch": {"max_events": 500},
            },
        },
    )
    assert await revision(client, account, pipeline_id) == 4

    patched = await client.patch(
        f"{base}/destination/{destination_id}",
        json={"type": "blackhole", "user_config": {}, "title": None},
        headers=account.headers,
    )
    assert patched.status_code == 200
    assert patched.json()["data"]["type"] == "blackhole"
    assert patched.json()["data"]["inputs"] == [processor["id"]]
    assert await revision(client, account, pipeline_id) == 5

    detail = await client.get(base, headers=account.headers)
    nodes = detail.json()["data"]["nodes"]
    assert [(n["kind"], n["id"]) for n in nodes] == [
        ("source", source_id),
        ("processor", processor["id"]),
        ("destination", destination_id),
    ]
    listed = await client.get(f"{base}/processor", headers=account.headers)
    assert [n["id"] for n in assert_envelope(listed.json(), type_="processor")] == [processor["id"]]

    # A node is addressed under its own kind only.
    wrong_kind = await client.get(f"{base}/processor/{source_id}", headers=account.headers)
    assert_v3_error(wrong_kind, 404)

    for kind, node_id in (
        ("destination", destination_id),
        ("processor", processor["id"]),
        ("source", source_id),
    ):
        deleted = await client.delete(f"{base}/{kind}/{node_id}", headers=account.headers)
        assert deleted.status_code == 200
        assert deleted.json()["data"]["id"] == node_id
    assert (await client.get(base, headers=account.headers)).json()["data"]["nodes"] == []
    assert await revision(client, account, pipeline_id) == 8


async def test_deleting_a_pipeline_deletes_its_nodes(client: AppClient) -> None:
    account = await new_account(client)
    pipeline_id = await make_pipeline(client, account)
    route_id, _source = await source_with_route(client, account, pipeline_id)
    assert (await client.delete(f"/v3/pipeline/{pipeline_id}", headers=account.headers)).is_success
    route = await client.get(f"/v3/pipeline/gateway-route/{route_id}", headers=account.headers)
    assert route.json()["data"]["sources"] == []


async def test_source_needs_a_route_of_the_same_account(client: AppClient) -> None:
    account = await new_account(client)
    other = await make_account(client, account.tenant)
    pipeline_id = await make_pipeline(client, account)
    foreign_route = await make_route(client, other)
    for route_id in (foreign_route, "00000000-0000-0000-0000-000000000000"):
        response = await client.post(
            f"/v3/pipeline/{pipeline_id}/source",
            json={"type": "http", "gateway_route_id": route_id},
            headers=account.headers,
        )
        error = assert_v3_error(response, 400)
        assert error["errors"][0]["instance_path"] == "/gateway_route_id"
    # Without a route, an http source gets one of its own (the platform's quickstart
    # reads its id back), in the same account.
    own = await client.post(
        f"/v3/pipeline/{pipeline_id}/source", json={"type": "http"}, headers=account.headers
    )
    assert own.status_code == 201, own.text
    route_id = own.json()["data"]["gateway_route_id"]
    route = await client.get(f"/v3/pipeline/gateway-route/{route_id}", headers=account.headers)
    assert route.status_code == 200
    assert route.json()["data"]["type"] == "http"
    assert route.json()["data"]["sources"] == [
        {"pipeline_id": pipeline_id, "source_id": own.json()["data"]["id"]}
    ]
    foreign = await client.get(f"/v3/pipeline/gateway-route/{route_id}", headers=other.headers)
    assert foreign.status_code == 404


async def test_source_can_move_to_another_route(client: AppClient) -> None:
    account = await new_account(client)
    pipeline_id = await make_pipeline(client, account)
    _first, source_id = await source_with_route(client, account, pipeline_id)
    second = await make_route(client, account)
    moved = await client.patch(
        f"/v3/pipeline/{pipeline_id}/source/{source_id}",
        json={"gateway_route_id": second},
        headers=account.headers,
    )
    assert moved.status_code == 200
    assert moved.json()["data"]["gateway_route_id"] == second


@pytest.mark.parametrize(
    ("kind", "body", "keyword", "instance_path"),
    [
        ("processor", {"type": "js-script", "user_config": {}}, "required", "/user_config"),
        ("processor", {"type": "no-such-processor"}, "enum", "/type"),
        ("destination", {"type": "no-such-destination"}, "enum", "/type"),
        ("source", {"type": "no-such-source", "gateway_route_id": "x"}, "enum", "/type"),
        ("processor", {"type": "filter", "user_config": []}, "type", "/user_config"),
        ("processor", {"type": "filter", "inputs": "abc"}, "type", "/inputs"),
        ("processor", {"type": "filter", "inputs": ["x"] * 51}, "maxItems", "/inputs"),
    ],
)
async def test_node_body_validation(
    client: AppClient, kind: str, body: dict[str, Any], keyword: str, instance_path: str
) -> None:
    account = await new_account(client)
    pipeline_id = await make_pipeline(client, account)
    response = await client.post(
        f"/v3/pipeline/{pipeline_id}/{kind}", json=body, headers=account.headers
    )
    error = assert_v3_error(response, 400)
    assert error["errors"][0]["keyword"] == keyword
    assert error["errors"][0]["instance_path"] == instance_path

"""Small factories and assertions for the pipeline API tests."""

from __future__ import annotations

from typing import Any

import httpx
from tests.factories import AccountCtx

from tidegate.api.error_models import V3Error

THROTTLE = {"threshold": 10, "window_ms": 1000}


def assert_v3_error(response: httpx.Response, status: int) -> dict[str, Any]:
    """The spec's v3 error body, with the given status; returns the body."""
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    V3Error.model_validate(body)
    assert body["status"] == status
    assert set(body) <= {"status", "context", "code", "message", "errors"}
    return body


def assert_envelope(body: dict[str, Any], *, type_: str, pk: str | None = "id") -> Any:
    assert set(body) == {"meta", "data"}
    assert body["meta"]["type"] == type_
    assert body["meta"]["pk"] == pk
    assert body["meta"]["page"] == {"next": None, "previous": None}
    for name in ("list", "detail", "update", "replace", "create"):
        link = body["meta"]["links"]["self"][name]
        assert link is None or set(link) == {"method", "uri"}
    return body["data"]


async def make_route(client: httpx.AsyncClient, account: AccountCtx, title: str = "r") -> str:
    response = await client.post(
        "/v3/pipeline/gateway-route", json={"title": title}, headers=account.headers
    )
    assert response.status_code == 201, response.text
    route_id: str = response.json()["data"]["id"]
    return route_id


async def make_pipeline(client: httpx.AsyncClient, account: AccountCtx, title: str = "p") -> str:
    response = await client.post("/v3/pipeline", json={"title": title}, headers=account.headers)
    assert response.status_code == 201, response.text
    pipeline_id: str = response.json()["data"]["id"]
    return pipeline_id


async def add_node(
    client: httpx.AsyncClient,
    account: AccountCtx,
    pipeline_id: str,
    kind: str,
    body: dict[str, Any],
) -> str:
    response = await client.post(
        f"/v3/pipeline/{pipeline_id}/{kind}", json=body, headers=account.headers
    )
    assert response.status_code == 201, response.text
    node_id: str = response.json()["data"]["id"]
    return node_id


async def enable_throttle(client: httpx.AsyncClient, account: AccountCtx) -> None:
    response = await client.put(
        f"/v3/enterprise/account/{account.account_id}/features/throttle-processor",
        headers=account.tenant.headers,
    )
    assert response.status_code == 200, response.text


async def source_with_route(
    client: httpx.AsyncClient, account: AccountCtx, pipeline_id: str
) -> tuple[str, str]:
    """A new gateway route and an HTTP source bound to it: ``(route_id, source_id)``."""
    route_id = await make_route(client, account)
    source_id = await add_node(
        client, account, pipeline_id, "source", {"type": "http", "gateway_route_id": route_id}
    )
    return route_id, source_id


async def publish(
    client: httpx.AsyncClient, account: AccountCtx, pipeline_id: str, *, allow: bool = True
) -> dict[str, Any]:
    """Publish the draft as the platform's provider does; answers the pipeline."""
    response = await client.post(
        f"/v3/pipeline/{pipeline_id}/publish",
        params={"allow_unconnected_edges": "true" if allow else "false"},
        json={},
        headers=account.headers,
    )
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()["data"]
    assert data["id"] == pipeline_id
    return data

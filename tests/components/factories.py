"""A pipeline fed by one source of a given type: ``(source type, user_config)`` plus the
steps of ``tests.gateway.factories.wire``."""

from __future__ import annotations

from typing import Any

import httpx
from tests.components.receiver import Receiver
from tests.factories import AccountCtx
from tests.gateway.factories import Wired, make_access_key, new_account
from tests.pipelines.factories import add_node, make_pipeline, make_route, publish

Step = tuple[str, str, str, dict[str, Any], list[str]]
STORE: list[Step] = [("store", "destination", "mezmo", {}, ["source"])]


async def wire_source(
    client: httpx.AsyncClient,
    account: AccountCtx,
    source_type: str,
    source_config: dict[str, Any],
    steps: list[Step] = STORE,
    *,
    routed: bool = True,
) -> Wired:
    pipeline_id = await make_pipeline(client, account)
    route_id = await make_route(client, account) if routed else ""
    key = await make_access_key(client, account, route_id) if routed else ""
    body: dict[str, Any] = {"type": source_type, "user_config": source_config}
    if routed:
        body["gateway_route_id"] = route_id
    source_id = await add_node(client, account, pipeline_id, "source", body)
    wired = Wired(account, pipeline_id, route_id, key, source_id, {"source": source_id})
    for name, kind, type_, config, inputs in steps:
        wired.nodes[name] = await add_node(
            client,
            account,
            pipeline_id,
            kind,
            {
                "type": type_,
                "title": name,
                "user_config": config,
                "inputs": [wired.nodes[ref] for ref in inputs],
            },
        )
    await publish(client, account, pipeline_id)
    return wired


async def delivered_ndjson(
    client: httpx.AsyncClient, steps: list[Step], events: list[dict[str, Any]]
) -> bytes:
    """What an ndjson http destination after ``steps`` (the last step's name is its
    input) receives of ``events`` POSTed to an http source, in a new account. The
    client must allow destinations on 127.0.0.1, where the receiver listens."""
    account = await new_account(client, throttle=False)
    async with Receiver() as receiver:
        out = {"uri": receiver.base, "encoding": "ndjson"}
        wired = await wire_source(
            client,
            account,
            "http",
            {},
            [*steps, ("out", "destination", "http", out, [steps[-1][0]])],
        )
        response = await client.post(wired.url, json=events, headers=wired.auth)
        assert response.status_code == 200, response.text
    (request,) = receiver.requests
    return request.body

"""Export v2 with a view id: the view's query and lists apply (SQLite, PostgreSQL)."""

from __future__ import annotations

import time

from tests.conftest import AppClient
from tests.ingest.factories import make_ingestor


async def test_export_applies_the_view(client: AppClient) -> None:
    who = await make_ingestor(client)
    headers = who.account.headers
    lines = [
        {"line": "payment failed: card", "app": "billing", "level": "error"},
        {"line": "payment failed: bank", "app": "api", "level": "error"},
        {"line": "payment ok", "app": "billing", "level": "info"},
        {"line": "login failed", "app": "billing", "level": "error"},
    ]
    response = await client.post(
        "/logs/ingest", params={"hostname": "h"}, json={"lines": lines}, headers=who.headers
    )
    assert response.status_code == 200
    view = await client.post(
        "/v1/config/view",
        json={"name": "billing failures", "query": "failed", "apps": ["billing"]},
        headers=headers,
    )
    view_id = view.json()["viewID"]
    now = int(time.time() * 1000)
    window = {"from": now - 600_000, "to": now + 600_000, "prefer": "head"}

    async def export(**params: object) -> list[str]:
        answer = await client.get("/v2/export", params={**window, **params}, headers=headers)
        assert answer.status_code == 200, answer.text
        return [line["_line"] for line in answer.json()["lines"]]

    assert await export(viewID=view_id) == ["payment failed: card", "login failed"]
    # The request's query narrows the view's; its own apps replace the view's.
    assert await export(viewID=view_id, query="payment") == ["payment failed: card"]
    assert await export(viewID=view_id, apps="api") == ["payment failed: bank"]
    assert len(await export()) == 4
    tagged = await client.post(
        "/logs/ingest",
        params={"hostname": "h", "tags": "canary"},
        json={"lines": [{"line": "payment failed: canary", "app": "billing"}]},
        headers=who.headers,
    )
    assert tagged.status_code == 200
    canary = await client.post(
        "/v1/config/view",
        json={"name": "canary failures", "query": "failed", "tags": ["canary"]},
        headers=headers,
    )
    assert await export(viewID=canary.json()["viewID"]) == ["payment failed: canary"]
    stranger = await make_ingestor(client)
    foreign = await client.get(
        "/v2/export", params={**window, "viewID": view_id}, headers=stranger.account.headers
    )
    missing = await client.get(
        "/v2/export", params={**window, "viewID": "f" * 24}, headers=stranger.account.headers
    )
    assert foreign.status_code == missing.status_code == 404
    assert foreign.json() == missing.json()

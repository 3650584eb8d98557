"""Issue 18: meta sent unindexed is stored and shown, never searched.

``@logdna/logger`` (logger-node ``lib/logger.js``, ``log``: ``message.meta =
indexMeta ? meta : stringify(meta)``, ``indexMeta`` false by default) and the Python
handler (``sanitize_meta``: ``json.dumps(meta)`` unless ``index_meta``) send unindexed
meta as a JSON string; the platform keeps it out of search. On both backends: export and
live tail show it, queries (field and free text), the app facet's neighbours and
exclusion rules never see it."""

from __future__ import annotations

import json
import time
from typing import Any

from tests.conftest import AppClient
from tests.ingest.factories import Ingestor, make_ingestor, stored_lines

from tidegate.logs.filtering import LineFilter


def _logger_node_lines(now_ms: int) -> list[dict[str, Any]]:
    """What ``@logdna/logger`` buffers for ``log(line, {meta})``: ``{timestamp, line,
    level, app, env, meta}`` (``lib/payloads.js``), meta stringified unless indexMeta."""
    return [
        {
            "timestamp": now_ms,
            "line": "indexed order",
            "level": "INFO",
            "app": "shop",
            "meta": {"order": "A-17", "customer": {"tier": "gold"}},
        },
        {
            "timestamp": now_ms,
            "line": "unindexed order",
            "level": "INFO",
            "app": "shop",
            "meta": json.dumps({"order": "B-42", "customer": {"tier": "platinum"}}),
        },
    ]


async def _send(client: AppClient, who: Ingestor, lines: list[dict[str, Any]]) -> None:
    now_ms = time.time_ns() // 1_000_000
    response = await client.post(
        "/logs/ingest",
        params={"hostname": "node-app", "now": now_ms},
        headers=who.headers,
        content=json.dumps({"e": "ls", "ls": lines}),
    )
    assert response.status_code == 200, response.text


async def _found(client: AppClient, who: Ingestor, query: str) -> list[str]:
    now_ms = time.time_ns() // 1_000_000
    response = await client.get(
        "/v1/export",
        params={"from": now_ms - 3_600_000, "to": now_ms, "json": "true", "q": query},
        headers=who.account.headers,
    )
    assert response.status_code == 200, response.text
    return [row["_line"] for row in response.json()]


async def test_unindexed_meta_is_shown_but_never_searched(client: AppClient) -> None:
    who = await make_ingestor(client)
    broker = client._transport.app.state.tidegate.tail  # type: ignore[attr-defined]
    async with broker.subscribe(who.account_id, LineFilter()) as subscription:
        await _send(client, who, _logger_node_lines(time.time_ns() // 1_000_000))
        batch = await subscription.next_batch(timeout=30)
    tailed = {line.record()["_line"]: line.record() for line in batch.lines}
    assert tailed["unindexed order"]["_meta"] == {
        "order": "B-42",
        "customer": {"tier": "platinum"},
    }

    exported = {row: row for row in await _found(client, who, "")}
    assert set(exported) == {"indexed order", "unindexed order"}
    now_ms = time.time_ns() // 1_000_000
    rows = (
        await client.get(
            "/v1/export",
            params={"from": now_ms - 3_600_000, "to": now_ms, "json": "true"},
            headers=who.account.headers,
        )
    ).json()
    shown = {row["_line"]: row.get("_meta") for row in rows}
    assert shown == {
        "indexed order": {"order": "A-17", "customer": {"tier": "gold"}},
        "unindexed order": {"order": "B-42", "customer": {"tier": "platinum"}},
    }

    # Searchable meta is found by its fields (and their presence); unindexed meta not.
    assert await _found(client, who, "order:A-17") == ["indexed order"]
    assert await _found(client, who, "customer.tier:gold") == ["indexed order"]
    assert await _found(client, who, "order:B-42") == []
    assert await _found(client, who, "customer.tier:platinum") == []
    assert await _found(client, who, "order:*") == ["indexed order"]
    assert await _found(client, who, "meta:*") == ["indexed order"]
    assert await _found(client, who, "order") == ["indexed order", "unindexed order"]

    (first, second) = await stored_lines(client.database_url, who.account_id)
    assert (first.meta_unindexed, second.meta) == (None, None)


async def test_exclusion_rules_do_not_see_unindexed_meta(client: AppClient) -> None:
    who = await make_ingestor(client)
    rule = await client.post(
        "/v1/config/ingestion/exclusions",
        json={"title": "drop platinum", "query": "customer.tier:platinum", "active": True},
        headers=who.account.headers,
    )
    assert rule.status_code == 200, rule.text
    lines = _logger_node_lines(time.time_ns() // 1_000_000)
    lines.append(
        {**lines[0], "line": "searchable platinum", "meta": {"customer": {"tier": "platinum"}}}
    )
    await _send(client, who, lines)
    stored = [row.line for row in await stored_lines(client.database_url, who.account_id)]
    assert stored == ["indexed order", "unindexed order"]


async def test_the_agents_labels_stay_searchable_beside_unindexed_meta(
    client: AppClient,
) -> None:
    who = await make_ingestor(client)
    line = {
        "t": time.time_ns() // 1_000_000,
        "line": "labelled",
        "f": "/srv/app.log",
        "label": {"team": "payments"},
        "meta": json.dumps({"secret_ish": "hidden-value"}),
    }
    await _send(client, who, [line])
    assert await _found(client, who, "labels.team:payments") == ["labelled"]
    assert await _found(client, who, "secret_ish:hidden-value") == []
    (row,) = await stored_lines(client.database_url, who.account_id)
    assert row.meta == {"labels": {"team": "payments"}}
    assert row.meta_unindexed == {"secret_ish": "hidden-value"}

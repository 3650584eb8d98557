"""Issue 9: ``/logs/ingest`` and the pipeline's log store write lines through one writer
(``logs.intake``): the same time rule, the same exclusion rules, the same usage and the
same live tail, checked here end to end over HTTP on both backends."""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import select
from tests.conftest import AppClient
from tests.gateway.factories import stored_lines, wire
from tests.ingest.factories import make_ingestor
from tests.waiting import eventually

from tidegate.db.engine import Database
from tidegate.logs.exclusion import RuleSet
from tidegate.logs.filtering import LineFilter
from tidegate.logs.intake import judge_lines
from tidegate.logs.store import NewLine
from tidegate.models import AccountUsage

STORE = [("store", "destination", "log_analysis", {}, ["source"])]

# (timestamp sent, epoch ms stored; None: the receive time, counted as a fallback)
TIMES: list[tuple[Any, int | None]] = [
    (1_600_000_000_000, 1_600_000_000_000),
    ("1600000000000", 1_600_000_000_000),
    ("2025-01-02T03:04:05.678Z", 1_735_787_045_678),
    ("2025-01-02T05:04:05+02:00", 1_735_787_045_000),
    ("2025-01-02 03:04:05", 1_735_787_045_000),  # no offset: UTC, on both paths
    (-5000, None),  # refused as a time on both paths, the line kept
    ("-5000", None),
    ("yesterday", None),
    (10**20, None),
]


def _now() -> int:
    return time.time_ns() // 1_000_000


async def _usage(database_url: str, account_id: str) -> tuple[int, int, int]:
    db = Database.connect(database_url)
    try:
        async with db.read_sessions() as session:
            rows = (
                await session.execute(
                    select(AccountUsage).where(AccountUsage.account_id == account_id)
                )
            ).scalars()
            totals = [0, 0, 0]
            for row in rows:
                totals[0] += row.lines_stored
                totals[1] += row.lines_excluded
                totals[2] += row.lines_fallback
            return totals[0], totals[1], totals[2]
    finally:
        await db.dispose()


async def test_both_paths_store_the_same_time_and_count_the_same_fallbacks(
    client: AppClient,
) -> None:
    ingestor = await make_ingestor(client)
    wired = await wire(client, ingestor.account, STORE)
    before = _now()
    for index, (value, _) in enumerate(TIMES):
        ingested = await client.post(
            "/logs/ingest",
            params={"hostname": "h"},
            json={"lines": [{"line": f"ingest {index}", "timestamp": value}]},
            headers=ingestor.headers,
        )
        assert ingested.status_code == 200, ingested.text
        sent = await client.post(
            wired.url,
            json={"line": f"gateway {index}", "timestamp": value, "host": "h"},
            headers=wired.auth,
        )
        assert sent.status_code == 200, sent.text
    after = _now()
    stored = {
        line.line: line.ts for line in await stored_lines(client.database_url, ingestor.account_id)
    }
    for index, (value, expected) in enumerate(TIMES):
        ingest_ts, gateway_ts = stored[f"ingest {index}"], stored[f"gateway {index}"]
        if expected is None:
            assert before <= ingest_ts <= after, value
            assert before <= gateway_ts <= after, value
        else:
            assert ingest_ts == gateway_ts == expected, value
    fallbacks = sum(1 for _, expected in TIMES if expected is None)
    assert await _usage(client.database_url, ingestor.account_id) == (
        2 * len(TIMES),
        0,
        2 * fallbacks,
    )


async def test_both_paths_apply_the_same_exclusion_rules_and_feed_live_tail(
    client: AppClient,
) -> None:
    ingestor = await make_ingestor(client)
    wired = await wire(client, ingestor.account, STORE)
    for rule in (
        {"title": "drop", "apps": ["noisy*"], "active": True, "indexonly": False},
        {"title": "tail", "query": "preserve", "active": True, "indexonly": True},
    ):
        created = await client.post(
            "/v1/config/ingestion/exclusions", json=rule, headers=ingestor.account.headers
        )
        assert created.status_code == 200, created.text
    lines = [
        {"line": "keep", "app": "web"},
        {"line": "gone", "app": "noisy-1"},
        {"line": "preserve for tail", "app": "web"},
    ]
    broker = client._transport.app.state.tidegate.tail  # type: ignore[attr-defined]
    async with broker.subscribe(ingestor.account_id, LineFilter()) as subscription:
        ingested = await client.post(
            "/logs/ingest",
            params={"hostname": "h"},
            json={"lines": lines},
            headers=ingestor.headers,
        )
        assert ingested.status_code == 200, ingested.text
        sent = await client.post(wired.url, json=lines, headers=wired.auth)
        assert sent.status_code == 200, sent.text
        seen: list[tuple[str, bool]] = []

        async def four_seen() -> bool:
            batch = await subscription.next_batch(timeout=0.5)
            seen.extend((line.line, line.indexonly) for line in batch.lines)
            return len(seen) >= 4

        await eventually(four_seen, every=0, what=lambda: f"4 lines on the tail, got {seen}")
    assert sorted(seen) == [
        ("keep", False),
        ("keep", False),
        ("preserve for tail", True),
        ("preserve for tail", True),
    ]
    assert [line.line for line in await stored_lines(client.database_url, ingestor.account_id)] == [
        "keep",
        "keep",
    ]
    assert await _usage(client.database_url, ingestor.account_id) == (2, 4, 0)


def test_judge_lines_without_rules_keeps_everything_and_builds_the_rows() -> None:
    lines = [NewLine(line="a", ts=1, host="h"), NewLine(line="bb", ts=2, host="h")]
    judged = judge_lines(account_id="acc", lines=lines, rules=RuleSet(()), received_ms=5)
    assert judged.stored == lines
    assert judged.batch is not None
    assert len(judged.batch.rows) == 2
    empty = judge_lines(account_id="acc", lines=[], rules=RuleSet(()), received_ms=5)
    assert empty.batch is None

"""GET /v1/usage, and the retention sweep with an injected clock."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta

from tests.conftest import AppClient
from tests.ingest.factories import add_rule, ingest, make_ingestor, stored_lines

from tidegate.db.engine import Database
from tidegate.ingest.retention import run_retention, sweep
from tidegate.ingest.service import now_ms, utc_today
from tidegate.logs.store import DAY_MS, NewLine, store_lines

USAGE = "/v1/usage"


async def test_usage_per_day_with_totals(client: AppClient) -> None:
    who = await make_ingestor(client)
    await add_rule(client, who, apps=["noisy"])
    await ingest(client, who, [{"line": "abcd"}, {"line": "xy", "app": "noisy"}])
    await ingest(client, who, [{"line": "ef"}])
    today = utc_today()
    response = await client.get(
        USAGE,
        params={"from": str(today - timedelta(days=2)), "to": str(today)},
        headers=who.account.headers,
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["from"] == str(today - timedelta(days=2))
    assert [day["day"] for day in body["days"]] == [
        str(today - timedelta(days=n)) for n in (2, 1, 0)
    ]
    assert body["days"][0] == {
        "day": str(today - timedelta(days=2)),
        "lines_stored": 0,
        "bytes_stored": 0,
        "lines_excluded": 0,
        "bytes_excluded": 0,
        "lines_fallback": 0,
    }
    expected = {
        "lines_stored": 2,
        "bytes_stored": 6,
        "lines_excluded": 1,
        "bytes_excluded": 2,
        "lines_fallback": 0,
    }
    assert body["days"][2] == {"day": str(today), **expected}
    assert body["totals"] == expected


async def test_usage_defaults_to_the_last_30_days_and_is_account_scoped(client: AppClient) -> None:
    who = await make_ingestor(client)
    other = await make_ingestor(client)
    await ingest(client, other, [{"line": "not yours"}])
    body = (await client.get(USAGE, headers=who.account.headers)).json()
    assert len(body["days"]) == 30
    assert body["to"] == str(utc_today())
    assert body["totals"]["lines_stored"] == 0


async def test_usage_refuses_bad_ranges_and_enterprise_keys(client: AppClient) -> None:
    who = await make_ingestor(client)
    for params in (
        {"from": "2025-02-01", "to": "2025-01-01"},
        {"from": "2023-01-01", "to": "2025-01-01"},
        {"from": "soon"},
        {"to": "0"},
        {"to": "2025-02-30"},
    ):
        response = await client.get(USAGE, params=params, headers=who.account.headers)
        assert response.status_code == 400, response.text
        assert response.json()["status"] == "error"
    assert (await client.get(USAGE, headers=who.account.tenant.headers)).status_code == 403
    assert (await client.get(USAGE)).status_code == 401


async def test_retention_deletes_lines_received_too_long_ago(client: AppClient) -> None:
    kept_forever = await make_ingestor(client, retention=0)
    short = await make_ingestor(client, retention=3)
    now = now_ms()
    db = Database.connect(client.database_url)
    try:
        async with db.write_sessions() as session:
            for who in (kept_forever, short):
                for age in (10, 5, 4, 2, 1, 0):  # stored oldest first, as time goes
                    await store_lines(
                        session=session,
                        account_id=who.account_id,
                        # The line's own time does not count: an old backfill is kept.
                        lines=[NewLine(line=f"{age}d", ts=1_000, host="h") for _ in range(3)],
                        received_ms=now - age * DAY_MS,
                    )
            await session.commit()
        accounts = [kept_forever.account_id, short.account_id]
        deleted = await sweep(db=db, now_ms=now, batch=2, account_ids=accounts)
        # A second sweep (another worker, or the next run) finds nothing more.
        again = await sweep(db=db, now_ms=now, batch=2, account_ids=accounts)
    finally:
        await db.dispose()
    assert (deleted, again) == (9, 0)
    short_rows = await stored_lines(client.database_url, short.account_id)
    assert [row.line for row in short_rows] == ["2d"] * 3 + ["1d"] * 3 + ["0d"] * 3
    assert len(await stored_lines(client.database_url, kept_forever.account_id)) == 18


async def test_retention_job_runs_on_its_clock(client: AppClient) -> None:
    # Two days ahead only reaches accounts keeping lines a day or two: this test's own.
    who = await make_ingestor(client, retention=1)
    await ingest(client, who, [{"line": "old news"}])
    db = Database.connect(client.database_url)
    swept = asyncio.Event()
    clock_calls = 0

    def clock() -> int:
        nonlocal clock_calls
        clock_calls += 1
        if clock_calls > 1:
            swept.set()
        return now_ms() + 2 * DAY_MS

    job = asyncio.create_task(run_retention(db=db, interval_s=0.01, clock=clock, first_delay_s=0))
    try:
        await asyncio.wait_for(swept.wait(), 120)
    finally:
        job.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await job
        await db.dispose()
    assert await stored_lines(client.database_url, who.account_id) == []


async def test_usage_at_the_ends_of_the_calendar(client: AppClient) -> None:
    who = await make_ingestor(client)
    for params, days in (
        ({"to": "0001-01-05"}, 5),
        ({"from": "9999-12-30", "to": "9999-12-31"}, 2),
    ):
        response = await client.get(USAGE, params=params, headers=who.account.headers)
        assert response.status_code == 200, response.text
        assert len(response.json()["days"]) == days

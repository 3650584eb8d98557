"""Paging while other transactions insert: no line is skipped or returned twice.

On PostgreSQL ids come from a sequence, so a transaction can hold a smaller id than one
that committed before it. The export's guarantee (docs/export-and-tail.md): every line
committed before the first page is returned exactly once; no line is ever returned
twice; a line from a transaction still in flight when the export began appears at most
once.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from typing import Any

import pytest
from tests.conftest import AppClient
from tests.export.helpers import BASE_MS, export, insert_lines, now_ms
from tests.factories import make_account, make_tenant

from tidegate.db.engine import Database
from tidegate.ingest.retention import sweep
from tidegate.logs.store import NewLine, store_lines


async def _page_through(
    client: AppClient, headers: dict[str, str], *, prefer: str, size: int, between: Any = None
) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        response = await export(client, headers, size=size, prefer=prefer, pagination_id=cursor)
        assert response.status_code == 200, response.text
        body = response.json()
        seen.extend(body["lines"])
        cursor = body["pagination_id"]
        if cursor is None:
            return seen
        if between is not None:
            await between()


@pytest.mark.parametrize("prefer", ["head", "tail"])
async def test_paging_with_concurrent_inserting_transactions(
    client: AppClient, prefer: str
) -> None:
    account = await make_account(client, await make_tenant(client.database_url))
    baseline = [
        NewLine(line=f"base {i}", ts=BASE_MS + random.randrange(60_000), host="h")
        for i in range(300)
    ]
    await insert_lines(client.database_url, account.account_id, baseline)

    postgres = client.database_url.startswith("postgresql")
    db = Database.connect(client.database_url)
    stop = asyncio.Event()
    written = 0

    async def writer(number: int) -> None:
        nonlocal written
        rng = random.Random(number)
        while not stop.is_set():
            async with db.write_sessions() as session:
                await store_lines(
                    session=session,
                    account_id=account.account_id,
                    lines=[
                        NewLine(line=f"late {number}", ts=BASE_MS + rng.randrange(60_000), host="h")
                        for _ in range(rng.randrange(1, 5))
                    ],
                    received_ms=now_ms(),
                )
                # Hold the transaction (and its ids) open while others commit.
                await asyncio.sleep(rng.random() * 0.01)
                await session.commit()
                written += 1
            await asyncio.sleep(0)

    pages = 0

    async def between() -> None:
        nonlocal pages
        pages += 1
        if pages == 3:
            # The app's retention job may sweep at any moment of a test (its first sweep
            # comes 1-30 s after start): lines within retention must not be touched.
            # (This test once stored its lines as received at BASE_MS, a year ago, and
            # lost them whenever that sweep fell inside the export.)
            await sweep(db=db, now_ms=now_ms(), account_ids=[account.account_id])
        await asyncio.sleep(0.002)

    writers = [asyncio.create_task(writer(n)) for n in range(4 if postgres else 1)]
    try:
        seen = await _page_through(client, account.headers, prefer=prefer, size=7, between=between)
    finally:
        stop.set()
        await asyncio.gather(*writers)
        await db.dispose()

    assert written > 0
    assert pages >= 3
    ids = Counter(item["_id"] for item in seen)
    assert max(ids.values()) == 1, "a line was returned twice"
    texts = Counter(item["_line"] for item in seen if item["_line"].startswith("base "))
    assert texts == Counter(item.line for item in baseline)
    order = [(item["_ts"], int(item["_id"])) for item in seen]
    assert order == sorted(order, reverse=prefer == "tail")


@pytest.mark.parametrize("in_flight_ts", [BASE_MS + 1, BASE_MS + 99_000])
async def test_a_transaction_in_flight_when_the_export_began(
    client: AppClient, in_flight_ts: int
) -> None:
    """PostgreSQL only: SQLite has one writer at a time, so ids follow commit order."""
    if not client.database_url.startswith("postgresql"):
        pytest.skip("ids are handed out in commit order on SQLite")
    account = await make_account(client, await make_tenant(client.database_url))
    baseline = [NewLine(line=f"base {i}", ts=BASE_MS + i * 1000, host="h") for i in range(50)]
    await insert_lines(client.database_url, account.account_id, baseline)

    db = Database.connect(client.database_url)
    try:
        async with db.write_sessions() as slow:
            # Takes an id now, commits only after the export began.
            await store_lines(
                session=slow,
                account_id=account.account_id,
                lines=[NewLine(line="in flight", ts=in_flight_ts, host="h")],
                received_ms=now_ms(),
            )
            await slow.flush()
            # A later id, committed before the export begins: the high-water mark.
            await insert_lines(
                client.database_url,
                account.account_id,
                [NewLine(line="committed", ts=BASE_MS + 500, host="h")],
                # Another day's usage row: the slow transaction holds today's.
                received_ms=now_ms() - 86_400_000,
            )
            first = (await export(client, account.headers, size=10, prefer="head")).json()
            await slow.commit()
        seen = list(first["lines"])
        cursor = first["pagination_id"]
        while cursor is not None:
            body = (
                await export(client, account.headers, size=10, prefer="head", pagination_id=cursor)
            ).json()
            seen.extend(body["lines"])
            cursor = body["pagination_id"]
    finally:
        await db.dispose()

    texts = Counter(item["_line"] for item in seen)
    assert all(texts[item.line] == 1 for item in baseline)
    assert texts["committed"] == 1
    # In the part already paged it cannot appear; in the part still ahead it may.
    assert texts["in flight"] == (0 if in_flight_ts == BASE_MS + 1 else 1)
    assert max(Counter(item["_id"] for item in seen).values()) == 1

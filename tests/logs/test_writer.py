"""Group commit (``tidegate.logs.writer``) on both backends: concurrent writes share one
transaction, usage is summed per account and day within it, a write the database
refuses fails alone, and closing commits what is pending. Flushes are driven by the
line count or by ``close``, never by a clock, so nothing here depends on timing."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import func, select
from tests.conftest import AppClient
from tests.factories import make_account, make_tenant

from tidegate.db.engine import Database
from tidegate.logs.store import NewLine, StoreBatch, utc_day
from tidegate.logs.writer import LineWriter
from tidegate.models import AccountUsage, LogLine

# Received now: PostgreSQL's partitions of past days may be dropped by retention tests
# sharing the database.
NOW = time.time_ns() // 1_000_000
# Long enough never to be what triggers a flush in these tests.
NEVER_S = 3600.0


@pytest.fixture
async def db(client: AppClient) -> AsyncIterator[Database]:
    database = Database.connect(client.database_url)
    try:
        yield database
    finally:
        await database.dispose()


async def _account(client: AppClient) -> str:
    return (await make_account(client, await make_tenant(client.database_url))).account_id


def _batch(account_id: str, *texts: str, excluded: int = 0) -> StoreBatch:
    return StoreBatch.of(
        account_id=account_id,
        received_ms=NOW,
        lines=[NewLine(line=text, ts=NOW, host="h") for text in texts],
        excluded_lines=excluded,
        excluded_bytes=excluded * 10,
    )


async def _lines(db: Database, account_id: str) -> list[str]:
    async with db.read_sessions() as session:
        rows = await session.execute(
            select(LogLine.line).where(LogLine.account_id == account_id).order_by(LogLine.id)
        )
        return [row[0] for row in rows]


async def _usage(db: Database, account_id: str) -> tuple[int, int, int, int]:
    async with db.read_sessions() as session:
        usage = (
            await session.execute(
                select(AccountUsage).where(
                    AccountUsage.account_id == account_id, AccountUsage.day == utc_day(NOW)
                )
            )
        ).scalar_one()
    return (usage.lines_stored, usage.bytes_stored, usage.lines_excluded, usage.bytes_excluded)


async def test_concurrent_writes_commit_in_one_transaction(client: AppClient, db: Database) -> None:
    first, second = await _account(client), await _account(client)
    # Six lines in all: the sixth line pending is what starts the one transaction.
    writer = LineWriter(db, delay_s=NEVER_S, max_lines=6)
    try:
        await asyncio.gather(
            writer.write([_batch(first, "a1", "a2")]),
            writer.write([_batch(second, "b1"), _batch(first, "a3", excluded=2)]),
            writer.write([_batch(second, "b2", "b3")]),
        )
        assert (writer.groups, writer.grouped_writes) == (1, 3)
    finally:
        await writer.close()
    assert await _lines(db, first) == ["a1", "a2", "a3"]
    assert await _lines(db, second) == ["b1", "b2", "b3"]
    # One usage row per account and day, summed over the group's writes.
    assert await _usage(db, first) == (3, 6, 2, 20)
    assert await _usage(db, second) == (3, 6, 0, 0)


async def test_a_refused_write_fails_alone(client: AppClient, db: Database) -> None:
    account = await _account(client)
    writer = LineWriter(db, delay_s=NEVER_S, max_lines=3)
    try:
        results = await asyncio.gather(
            writer.write([_batch(account, "kept 1")]),
            # No such account: the foreign key refuses the row, and the whole group.
            writer.write([_batch("no-such-account", "refused")]),
            writer.write([_batch(account, "kept 2")]),
            return_exceptions=True,
        )
    finally:
        await writer.close()
    assert results[0] is None
    assert results[2] is None
    assert isinstance(results[1], Exception)
    assert await _lines(db, account) == ["kept 1", "kept 2"]
    assert await _usage(db, account) == (2, 12, 0, 0)


async def test_one_write_is_all_or_nothing(client: AppClient, db: Database) -> None:
    """A write of several accounts (the pipeline's) commits every batch or none."""
    account = await _account(client)
    writer = LineWriter(db, delay_s=NEVER_S, max_lines=2)
    try:
        with pytest.raises(Exception):  # noqa: B017, PT011 - the driver's integrity error
            await writer.write([_batch(account, "with"), _batch("no-such-account", "culprit")])
    finally:
        await writer.close()
    assert await _lines(db, account) == []


async def test_close_commits_what_is_pending(client: AppClient, db: Database) -> None:
    account = await _account(client)
    writer = LineWriter(db, delay_s=NEVER_S, max_lines=1_000)
    pending = asyncio.create_task(writer.write([_batch(account, "pending")]))
    await asyncio.sleep(0)  # the write is queued, far below the line count
    assert not pending.done()
    await writer.close()
    await pending
    assert await _lines(db, account) == ["pending"]


async def test_a_write_after_close_is_refused(client: AppClient, db: Database) -> None:
    writer = LineWriter(db)
    await writer.close()
    with pytest.raises(Exception, match="shutting down"):
        await writer.write([_batch(await _account(client), "late")])


async def test_writes_past_the_line_count_make_several_groups(
    client: AppClient, db: Database
) -> None:
    account = await _account(client)
    writer = LineWriter(db, delay_s=NEVER_S, max_lines=2)
    try:
        await asyncio.gather(*(writer.write([_batch(account, f"{n}a", f"{n}b")]) for n in range(4)))
        assert (writer.groups, writer.grouped_writes) == (4, 4)
    finally:
        await writer.close()
    assert len(await _lines(db, account)) == 8
    assert (await _usage(db, account))[0] == 8


async def test_the_writer_numbers_lines_after_any_other_writer(
    client: AppClient, db: Database
) -> None:
    """Lines written by the writer's own connection and through a session interleave
    with growing ids on both backends (export's cursor relies on it)."""
    from tidegate.logs.store import store_lines

    account = await _account(client)
    writer = LineWriter(db, delay_s=NEVER_S, max_lines=1)
    try:
        await writer.write([_batch(account, "one")])
        async with db.write_sessions() as session:
            await store_lines(
                session=session,
                account_id=account,
                lines=[NewLine(line="two", ts=NOW, host="h")],
                received_ms=NOW,
            )
            await session.commit()
        await writer.write([_batch(account, "three")])
    finally:
        await writer.close()
    assert await _lines(db, account) == ["one", "two", "three"]
    async with db.read_sessions() as session:
        count = (
            await session.execute(select(func.count()).where(LogLine.account_id == account))
        ).scalar_one()
    assert count == 3

"""PostgreSQL: the line writer keeps the statistics of the partitions it fills current
(``tidegate.logs.analyze``): a partition is analyzed once enough rows were added, not
before; a failing ANALYZE loses no line and leaves the writer working; a partition
another process holds or has just analyzed is left alone.

Each test writes to a day of its own far in the future (retention never drops a future
partition, and no other test writes there), and waits for the analyzer with
``settle``, never a clock."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import make_url
from tests.conftest import AppClient
from tests.factories import make_account, make_tenant

from tidegate.db.engine import Database
from tidegate.logs.analyze import PartitionAnalyzer
from tidegate.logs.store import DAY_MS, NewLine, StoreBatch, partition_name
from tidegate.logs.writer import LineWriter
from tidegate.models import LogLine

NEVER_S = 3600.0
TODAY = time.time_ns() // 1_000_000 // DAY_MS


@pytest.fixture
async def db(client: AppClient) -> AsyncIterator[Database]:
    if not client.database_url.startswith("postgresql"):
        pytest.skip("PostgreSQL's partitions and their statistics")
    database = Database.connect(client.database_url)
    try:
        yield database
    finally:
        await database.dispose()


@pytest.fixture
async def account(client: AppClient, db: Database) -> str:
    return (await make_account(client, await make_tenant(client.database_url))).account_id


@pytest.fixture
def day() -> int:
    """A day no other test writes to: years ahead."""
    return TODAY + 3_650 + uuid.uuid4().int % 100_000


@pytest.fixture
async def admin(client: AppClient, db: Database) -> AsyncIterator[asyncpg.Connection]:
    """A connection of the test's own, as another process would hold."""
    dsn = make_url(client.database_url).set(drivername="postgresql").render_as_string(False)
    connection = await asyncpg.connect(dsn)
    try:
        yield connection
    finally:
        await connection.close()


def _writer(db: Database, **analyzer: float) -> LineWriter:
    return LineWriter(db, delay_s=0, max_lines=10_000, analyzer=PartitionAnalyzer(db, **analyzer))


async def _write(writer: LineWriter, account: str, day: int, lines: int) -> None:
    received_ms = day * DAY_MS + 1_000
    batch = StoreBatch.of(
        account_id=account,
        received_ms=received_ms,
        lines=[NewLine(line=f"line {n}", ts=received_ms, host="h") for n in range(lines)],
    )
    await writer.write([batch])
    assert writer.analyzer is not None
    await writer.analyzer.settle()


async def _statistics(admin: asyncpg.Connection, day: int) -> tuple[int, float]:
    """The partition's analyze count and its rows as the planner knows them."""
    row = await admin.fetchrow(
        "SELECT pg_stat_get_analyze_count(oid), reltuples FROM pg_class "
        "WHERE oid = to_regclass($1)",
        partition_name(day),
    )
    assert row is not None
    return int(row[0]), float(row[1])


async def _lines(db: Database, account: str) -> int:
    async with db.read_sessions() as session:
        count = await session.scalar(
            select(func.count()).select_from(LogLine).where(LogLine.account_id == account)
        )
    return int(count or 0)


async def test_a_partition_is_analyzed_past_the_threshold_not_before(
    db: Database, account: str, day: int, admin: asyncpg.Connection
) -> None:
    writer = _writer(db, floor=50, fraction=0.5)
    try:
        await _write(writer, account, day, 49)
        # Never analyzed: PostgreSQL does not know how many rows there are.
        assert await _statistics(admin, day) == (0, -1)
        await _write(writer, account, day, 1)
        assert await _statistics(admin, day) == (1, 50)
        # Next: 50 rows plus half of the 50 there were.
        await _write(writer, account, day, 74)
        assert await _statistics(admin, day) == (1, 50)
        await _write(writer, account, day, 1)
        assert await _statistics(admin, day) == (2, 125)
    finally:
        await writer.close()
    assert writer.analyzer is not None
    assert (writer.analyzer.analyzed, writer.analyzer.failed) == (2, 0)


async def test_a_failing_analyze_loses_no_line_and_the_writer_goes_on(
    db: Database, account: str, day: int, admin: asyncpg.Connection
) -> None:
    writer = _writer(db, floor=20, fraction=0.5, lock_timeout_s=0.05)
    analyzer = writer.analyzer
    assert analyzer is not None
    try:
        await _write(writer, account, day, 1)
        # Another session holds the lock ANALYZE needs (and lets lines be written).
        async with admin.transaction():
            await admin.execute(
                f'LOCK TABLE "{partition_name(day)}" IN SHARE UPDATE EXCLUSIVE MODE'
            )
            await _write(writer, account, day, 19)
            assert analyzer.failed == 1
            assert await _lines(db, account) == 20
        # Counted afresh after a failure: 19 more rows are not enough, 20 are.
        await _write(writer, account, day, 19)
        assert (analyzer.analyzed, analyzer.failed) == (0, 1)
        await _write(writer, account, day, 1)
    finally:
        await writer.close()
    assert await _lines(db, account) == 40
    assert analyzer.analyzed == 1
    assert await _statistics(admin, day) == (1, 40)


async def test_a_dropped_partition_is_left_alone(db: Database, day: int) -> None:
    analyzer = PartitionAnalyzer(db, floor=1)
    try:
        analyzer.added({day: 100})  # a day whose partition does not exist (dropped)
        await analyzer.settle()
    finally:
        await analyzer.close()
    assert (analyzer.analyzed, analyzer.skipped, analyzer.failed) == (0, 1, 0)


async def test_a_partition_another_process_is_analyzing_is_left_to_it(
    db: Database, account: str, day: int, admin: asyncpg.Connection
) -> None:
    writer = _writer(db, floor=20, fraction=0.5)
    analyzer = writer.analyzer
    assert analyzer is not None
    try:
        await admin.execute("SELECT pg_advisory_lock(7235403, $1)", day)
        await _write(writer, account, day, 20)
        assert (analyzer.analyzed, analyzer.skipped) == (0, 1)
        assert await _statistics(admin, day) == (0, -1)
    finally:
        await writer.close()


async def test_a_partition_another_process_just_analyzed_is_not_analyzed_again(
    db: Database, account: str, day: int, admin: asyncpg.Connection
) -> None:
    first, second = _writer(db, floor=20, fraction=0.5), _writer(db, floor=20, fraction=0.5)
    try:
        await _write(first, account, day, 20)
        assert await _statistics(admin, day) == (1, 20)
        # The second process's own 20 rows pass its first threshold, but the partition
        # was analyzed with 20 rows: the next is due at 20 + 10 rows since.
        await _write(second, account, day, 20)
        assert second.analyzer is not None
        assert (second.analyzer.analyzed, second.analyzer.skipped) == (0, 1)
        assert await _statistics(admin, day) == (1, 20)
    finally:
        await first.close()
        await second.close()

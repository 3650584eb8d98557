"""Migration 0022 (``log_segments.trigram_filters``, the segment index) on a database
holding a segment's registry row, on SQLite and PostgreSQL: a segment registered before
it has no index (null: reads scan it whole), one written after keeps its bytes, and it
downgrades too."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import update
from tests.logs.test_migration_0019 import WINDOW_MS, _execute, account_of_a_new_database, empty_db
from tests.pipelines.test_migration_0008 import downgrade

from tidegate.db.engine import Database
from tidegate.db.migrate import upgrade_database
from tidegate.models import LogSegment

__all__ = ["empty_db"]


async def test_segments_registered_before_0022_have_no_index(empty_db: str, tmp_path: Path) -> None:
    account = await account_of_a_new_database(empty_db, tmp_path)
    await downgrade(empty_db, "0021")
    for first in (5, 8):
        await _execute(
            empty_db,
            "INSERT INTO log_segments (account_id, path, window_ms, lines, bytes, min_ts, "
            "max_ts, min_id, max_id, created_ms, max_received_ms) "
            "VALUES (:account, :path, :window, 3, 100, 1, 2, :first, :last, 9, 10)",
            account=account.account_id,
            path=f"{account.account_id}/{WINDOW_MS}-{first}.parquet",
            window=WINDOW_MS,
            first=first,
            last=first + 2,
        )
    await upgrade_database(empty_db)
    db = Database.connect(empty_db)
    try:
        async with db.write_sessions() as session:
            await session.execute(
                update(LogSegment).where(LogSegment.min_id == 8).values(trigram_filters=b"\0\1\xff")
            )
            await session.commit()
    finally:
        await db.dispose()
    rows = await _execute(
        empty_db, "SELECT min_id, trigram_filters FROM log_segments ORDER BY min_id"
    )
    assert [(row[0], None if row[1] is None else bytes(row[1])) for row in rows] == [
        (5, None),
        (8, b"\0\1\xff"),
    ]
    await downgrade(empty_db, "0021")
    assert await _execute(empty_db, "SELECT min_id FROM log_segments ORDER BY min_id") == [
        (5,),
        (8,),
    ]

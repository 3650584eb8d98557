"""Migration 0019 (``log_segments.max_received_ms``) on a database holding a segment's
registry row, on SQLite and PostgreSQL: the row gets its window's start plus the longest
window as the bound retention drops it by, and it downgrades too."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text
from tests.conftest import make_settings, open_client
from tests.factories import AccountCtx, make_account, make_tenant
from tests.pipelines.test_migration_0008 import downgrade

from tidegate.db.engine import Database
from tidegate.db.migrate import upgrade_database

WINDOW_MS = 1_700_006_400_000


@pytest.fixture(params=["sqlite", "postgres"])
def empty_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'm.sqlite3'}"
    return str(request.getfixturevalue("fresh_pg_url"))


async def _execute(url: str, sql: str, **values: object) -> list[tuple[object, ...]]:
    db = Database.connect(url)
    try:
        async with db.write_sessions() as session:
            result = await session.execute(text(sql), values)
            rows = [tuple(row) for row in result] if result.returns_rows else []
            await session.commit()
            return rows
    finally:
        await db.dispose()


async def account_of_a_new_database(url: str, tmp_path: Path) -> AccountCtx:
    """An account of a database brought up to date, to register segments of."""
    await upgrade_database(url)
    client, lifespan = await open_client(make_settings(url, tmp_path))
    try:
        return await make_account(client, await make_tenant(url))
    finally:
        await client.aclose()
        await lifespan.__aexit__(None, None, None)


async def test_segments_registered_before_0019_get_a_bound(empty_db: str, tmp_path: Path) -> None:
    account = await account_of_a_new_database(empty_db, tmp_path)
    await downgrade(empty_db, "0018")
    await _execute(
        empty_db,
        "INSERT INTO log_segments (account_id, path, window_ms, lines, bytes, min_ts, max_ts, "
        "min_id, max_id, created_ms) VALUES (:account, :path, :window, 3, 100, 1, 2, 5, 7, 9)",
        account=account.account_id,
        path=f"{account.account_id}/{WINDOW_MS}-5.parquet",
        window=WINDOW_MS,
    )
    await upgrade_database(empty_db)
    rows = await _execute(empty_db, "SELECT max_received_ms, lines FROM log_segments")
    assert rows == [(WINDOW_MS + 7 * 86_400_000 - 1, 3)]
    await downgrade(empty_db, "0018")
    assert await _execute(empty_db, "SELECT lines FROM log_segments") == [(3,)]

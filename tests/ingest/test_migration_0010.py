"""Migration 0010 (``log_lines.meta_unindexed``) on a database holding lines, on SQLite
and PostgreSQL: lines stored before it are exported as before, lines with unindexed
meta can be stored after it, and it downgrades with data too."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from sqlalchemy import text
from tests.conftest import make_settings, open_client
from tests.ingest.factories import make_ingestor
from tests.pipelines.test_migration_0008 import downgrade

from tidegate.db.engine import Database
from tidegate.db.migrate import upgrade_database


@pytest.fixture(params=["sqlite", "postgres"])
def empty_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'm.sqlite3'}"
    return str(request.getfixturevalue("fresh_pg_url"))


async def _columns(url: str) -> list[str]:
    db = Database.connect(url)
    try:
        async with db.read_sessions() as session:
            result = await session.execute(text("SELECT * FROM log_lines WHERE 1 = 0"))
            return list(result.keys())
    finally:
        await db.dispose()


async def test_lines_survive_0010_both_ways(empty_db: str, tmp_path: Path) -> None:
    await upgrade_database(empty_db)
    client, lifespan = await open_client(make_settings(empty_db, tmp_path))
    try:
        who = await make_ingestor(client)
        now_ms = time.time_ns() // 1_000_000
        body = {"lines": [{"line": "before", "meta": {"k": "v"}, "timestamp": now_ms}]}
        response = await client.post(
            "/logs/ingest", params={"hostname": "h"}, headers=who.headers, json=body
        )
        assert response.status_code == 200, response.text
    finally:
        await client.aclose()
        await lifespan.__aexit__(None, None, None)

    await downgrade(empty_db, "0008")
    assert "meta_unindexed" not in await _columns(empty_db)
    await upgrade_database(empty_db)
    assert "meta_unindexed" in await _columns(empty_db)

    client, lifespan = await open_client(make_settings(empty_db, tmp_path))
    try:
        now_ms = time.time_ns() // 1_000_000
        body = {"lines": [{"line": "after", "meta": json.dumps({"k": "hidden"})}]}
        response = await client.post(
            "/logs/ingest", params={"hostname": "h"}, headers=who.headers, json=body
        )
        assert response.status_code == 200, response.text
        exported = await client.get(
            "/v1/export",
            params={"from": now_ms - 3_600_000, "json": "true"},
            headers=who.account.headers,
        )
        assert exported.status_code == 200, exported.text
        shown = {row["_line"]: row["_meta"] for row in exported.json()}
        assert shown == {"before": {"k": "v"}, "after": {"k": "hidden"}}
        found = await client.get(
            "/v1/export",
            params={"from": now_ms - 3_600_000, "json": "true", "q": "k:*"},
            headers=who.account.headers,
        )
        assert [row["_line"] for row in found.json()] == ["before"]
    finally:
        await client.aclose()
        await lifespan.__aexit__(None, None, None)

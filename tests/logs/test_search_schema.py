"""The log store's search schema (migration 0004) on both backends: what the store
writes beside each line, how retention removes it, and migrating existing lines."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text
from tests.conftest import AppClient, _create_pg_database, _drop_pg_database, pg_url
from tests.factories import RAW_ACCOUNT_ROWS, make_account, make_tenant

from tidegate.db.engine import Database
from tidegate.db.migrate import upgrade_database
from tidegate.ingest.retention import sweep
from tidegate.ingest.service import now_ms
from tidegate.logs.schema_upkeep import reindex_database
from tidegate.logs.store import (
    DAY_MS,
    NewLine,
    document_json,
    partition_name,
    search_text,
    store_lines,
)


async def _search_hits(db: Database, account_id: str, literal: str) -> list[str]:
    """The account's lines whose search text contains ``literal`` (3+ characters), found
    through the search index of the backend."""
    if db.url.startswith("postgresql"):
        query = text(
            "SELECT line FROM log_lines WHERE account_id = :account AND search LIKE :pattern "
            "ORDER BY id"
        )
        parameters = {"account": account_id, "pattern": f"%{literal}%"}
    else:
        query = text(
            "SELECT line FROM log_lines WHERE account_id = :account AND id IN "
            "(SELECT rowid FROM log_search WHERE log_search MATCH :match) ORDER BY id"
        )
        # detail=none: no phrases, a literal is the AND of its trigrams.
        trigrams = (literal[i : i + 3].replace('"', '""') for i in range(len(literal) - 2))
        parameters = {"account": account_id, "match": " AND ".join(f'"{t}"' for t in trigrams)}
    async with db.read_sessions() as session:
        return list((await session.execute(query, parameters)).scalars())


async def test_the_store_writes_folded_fields_and_the_search_text(client: AppClient) -> None:
    account = await make_account(client, await make_tenant(client.database_url))
    db = Database.connect(client.database_url)
    try:
        async with db.write_sessions() as session:
            await store_lines(
                session=session,
                account_id=account.account_id,
                lines=[
                    NewLine(
                        line="Straße CLOSED",
                        ts=1,
                        host="Web-1",
                        app="API",
                        level="ERROR",
                        meta={"User": {"Name": "Zoë"}, "big": 1e16},
                    ),
                    NewLine(line="plain", ts=2, host="h"),
                ],
                received_ms=now_ms(),
            )
            await session.commit()
        async with db.read_sessions() as session:
            rows = (
                await session.execute(
                    text(
                        "SELECT host_folded, app_folded, level_folded FROM log_lines "
                        "WHERE account_id = :account ORDER BY id"
                    ),
                    {"account": account.account_id},
                )
            ).all()
        assert [tuple(row) for row in rows] == [("web-1", "api", "error"), ("h", None, None)]
        # Case-folded as the matcher folds (ß is ss), meta values included.
        assert await _search_hits(db, account.account_id, "strasse closed") == ["Straße CLOSED"]
        assert await _search_hits(db, account.account_id, "zoë") == ["Straße CLOSED"]
        assert await _search_hits(db, account.account_id, "10000000000000000") == ["Straße CLOSED"]
        assert await _search_hits(db, account.account_id, "nothing") == []
    finally:
        await db.dispose()


def test_search_text_and_documents() -> None:
    assert search_text("ABC", None) == "abc"
    assert search_text("ABC", '{"K":"Ünd"}') == 'abc\x1e{"k":"ünd"}'
    # Written as the databases can hold them and PostgreSQL's jsonb gives them back.
    assert document_json({"a": "x\x00y", "b": 1e16, "c": float("inf")}) == (
        '{"a":"x\ufffdy","b":10000000000000000,"c":null}'
    )
    assert document_json({"k": "é"}) == '{"k":"é"}'


async def test_retention_removes_lines_from_the_search_index(client: AppClient) -> None:
    short = await make_account(client, await make_tenant(client.database_url), retention=2)
    now = now_ms()
    db = Database.connect(client.database_url)
    try:
        async with db.write_sessions() as session:
            for age, word in ((5, "expired"), (0, "current")):
                await store_lines(
                    session=session,
                    account_id=short.account_id,
                    lines=[NewLine(line=f"{word} line", ts=1, host="h")],
                    received_ms=now - age * DAY_MS,
                )
            await session.commit()
        assert await sweep(db=db, now_ms=now, account_ids=[short.account_id]) == 1
        assert await _search_hits(db, short.account_id, "expired") == []
        assert await _search_hits(db, short.account_id, "current") == ["current line"]
        if db.url.startswith("sqlite"):
            # Gone from the index itself, not only hidden by the join.
            async with db.read_sessions() as session:
                count = await session.scalar(
                    text(
                        'SELECT count(*) FROM log_search WHERE log_search MATCH \'"xpi" AND "red"\''
                    )
                )
            assert count == 0
    finally:
        await db.dispose()


async def test_postgresql_retention_drops_whole_expired_days(client: AppClient) -> None:
    if not client.database_url.startswith("postgresql"):
        pytest.skip("partitions are PostgreSQL's")
    tenant = await make_tenant(client.database_url)
    short = await make_account(client, tenant, retention=3)
    forever = await make_account(client, tenant, retention=0)
    now = now_ms()
    # Days far in the past, which no other test of the session writes to.
    only_short, shared = now - 400 * DAY_MS, now - 401 * DAY_MS
    db = Database.connect(client.database_url)
    try:
        async with db.write_sessions() as session:
            for account, received in ((short, only_short), (short, shared), (forever, shared)):
                await store_lines(
                    session=session,
                    account_id=account.account_id,
                    lines=[NewLine(line="old", ts=1, host="h")] * 2,
                    received_ms=received,
                )
            await session.commit()
        deleted = await sweep(db=db, now_ms=now)
        async with db.read_sessions() as session:
            names = {
                day: await session.scalar(
                    text("SELECT to_regclass(:name)"),
                    {"name": partition_name(day)},
                )
                for day in (only_short // DAY_MS, shared // DAY_MS)
            }
            left = (
                await session.execute(
                    text(
                        "SELECT account_id, count(*) FROM log_lines "
                        "WHERE account_id IN (:short, :forever) GROUP BY account_id"
                    ),
                    {"short": short.account_id, "forever": forever.account_id},
                )
            ).all()
    finally:
        await db.dispose()
    # The day only the short account wrote to went whole; the shared day stays, with the
    # short account's lines deleted row by row.
    assert names[only_short // DAY_MS] is None
    assert names[shared // DAY_MS] is not None
    assert dict(left) == {forever.account_id: 2}
    assert deleted >= 4


_OLD_LINE = (
    "INSERT INTO log_lines (account_id, ts, received_ms, host, app, level, meta, line, "
    "size_bytes) VALUES (:account, 5, :received, 'Web-1', 'API', 'Error', :meta, :line, 3)"
)


async def _migrate_from_0003(url: str) -> None:
    await upgrade_database(url, "0003")
    db = Database.connect(url)
    try:
        async with db.write_sessions() as session:
            for statement in RAW_ACCOUNT_ROWS:
                await session.execute(text(statement))
            for line, meta in (("Straße one", '{"who": "Zo\\u00eb"}'), ("two", None)):
                await session.execute(
                    text(_OLD_LINE),
                    {"account": "a1", "received": now_ms(), "meta": meta, "line": line},
                )
            await session.commit()
    finally:
        await db.dispose()
    await upgrade_database(url)
    db = Database.connect(url)
    try:
        async with db.write_sessions() as session:
            await store_lines(
                session=session,
                account_id="a1",
                lines=[NewLine(line="three", ts=6, host="h")],
                received_ms=now_ms(),
            )
            await session.commit()
        async with db.read_sessions() as session:
            rows = (
                await session.execute(
                    text("SELECT id, line, host_folded, level_folded FROM log_lines ORDER BY id")
                )
            ).all()
        assert [tuple(row) for row in rows] == [
            (1, "Straße one", "web-1", "error"),
            (2, "two", "web-1", "error"),
            (3, "three", "h", None),
        ]
        # The old ASCII-escaped meta is searchable as the text it holds.
        assert await _search_hits(db, "a1", "zoë") == ["Straße one"]
        assert await _search_hits(db, "a1", "strasse") == ["Straße one"]
        assert await _search_hits(db, "a1", "three") == ["three"]
    finally:
        await db.dispose()
    # ``tidegate db reindex`` rebuilds the same index.
    assert await reindex_database(url) == 3
    db = Database.connect(url)
    try:
        assert await _search_hits(db, "a1", "zoë") == ["Straße one"]
        assert await _search_hits(db, "a1", "three") == ["three"]
        assert await _search_hits(db, "a1", "zzz") == []
    finally:
        await db.dispose()


async def test_migration_0004_carries_lines_over_sqlite(tmp_path: Path) -> None:
    await _migrate_from_0003(f"sqlite+aiosqlite:///{tmp_path / 'old.sqlite3'}")


async def test_migration_0004_carries_lines_over_postgresql() -> None:
    name = await _create_pg_database()
    try:
        await _migrate_from_0003(pg_url(name))
    finally:
        await _drop_pg_database(name)

"""Migrations 0011 (``made_by`` on keys, views and preset alerts) and 0012 (the shared
sign-in counts and signatures) on a database with data, on SQLite and PostgreSQL: both
downgrade and upgrade again, and a key that comes out of them without a maker acts as
owner, as keys made before them did."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text
from tests.conftest import make_settings, open_client
from tests.factories import make_account, make_tenant
from tests.ingest.test_migration_0010 import empty_db  # noqa: F401 (a fixture)
from tests.pipelines.test_migration_0008 import downgrade
from tests.users.factories import add_person

from tidegate.db.engine import Database
from tidegate.db.migrate import upgrade_database


async def _schema(url: str) -> tuple[list[str], bool]:
    """The api_keys columns, and whether the shared counts' table exists."""
    db = Database.connect(url)
    try:
        async with db.read_sessions() as session:
            keys = list((await session.execute(text("SELECT * FROM api_keys WHERE 1 = 0"))).keys())
        async with db.read_sessions() as session:
            try:
                await session.execute(text("SELECT 1 FROM auth_counters WHERE 1 = 0"))
            except Exception:
                return keys, False
        return keys, True
    finally:
        await db.dispose()


async def test_0011_and_0012_both_ways_with_keys(
    empty_db: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    await upgrade_database(empty_db)
    client, lifespan = await open_client(make_settings(empty_db, tmp_path))
    try:
        account = await make_account(client, await make_tenant(empty_db))
        admin = await add_person(empty_db, account_id=account.account_id, role="admin")
        made = await client.post(
            "/v1/config/keys", params={"type": "service"}, headers=account.headers
        )
        assert made.status_code == 200, made.text
        key = {"Authorization": f"Token {made.json()['key']}"}
    finally:
        await client.aclose()
        await lifespan.__aexit__(None, None, None)

    await downgrade(empty_db, "0010")
    columns, shared = await _schema(empty_db)
    assert "made_by" not in columns
    assert not shared
    await upgrade_database(empty_db)
    columns, shared = await _schema(empty_db)
    assert "made_by" in columns
    assert shared

    client, lifespan = await open_client(make_settings(empty_db, tmp_path))
    try:
        # No maker: the key acts as owner (only an owner may make an owner).
        promoted = await client.put(
            f"/v1/config/members/{admin.email}", json={"role": "owner"}, headers=key
        )
        assert promoted.status_code == 200, promoted.text
    finally:
        await client.aclose()
        await lifespan.__aexit__(None, None, None)

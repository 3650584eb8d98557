"""Migration 0005 on a database with data (SQLite and PostgreSQL): a key made before it
(hash only) keeps working and reads back with ``key: null``; keys made after are sealed;
accounts start with ingestion active; the downgrade removes the columns again."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import Connection, inspect, text
from sqlalchemy.ext.asyncio import create_async_engine
from tests.conftest import make_settings, open_client
from tests.factories import RAW_ACCOUNT_ROWS

from tidegate.auth.secrets import MANAGEMENT_DOMAIN, hash_secret, new_service_key
from tidegate.db.engine import Database
from tidegate.db.migrate import alembic_config, upgrade_database


@pytest.fixture(params=["sqlite", "postgres"])
def old_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'old.sqlite3'}"
    return str(request.getfixturevalue("fresh_pg_url"))


async def _seed_0004(url: str, secret: str) -> None:
    await upgrade_database(url, "0004")
    db = Database.connect(url)
    try:
        async with db.write_sessions() as session:
            for statement in RAW_ACCOUNT_ROWS:
                await session.execute(text(statement))
            await session.execute(
                text(
                    "INSERT INTO api_keys (id, kind, account_id, name, key_hash, hint, "
                    "created_at) VALUES ('k1', 'service', 'a1', 'old', :hash, :hint, "
                    "CURRENT_TIMESTAMP)"
                ),
                {"hash": hash_secret(secret, domain=MANAGEMENT_DOMAIN), "hint": secret[-4:]},
            )
            await session.commit()
    finally:
        await db.dispose()


async def test_upgrade_keeps_old_keys_working_with_a_null_key(old_db: str, tmp_path: Path) -> None:
    secret = new_service_key()
    await _seed_0004(old_db, secret)
    await upgrade_database(old_db)
    client, lifespan = await open_client(make_settings(old_db, tmp_path / "data"))
    try:
        headers = {"Authorization": f"Token {secret}"}
        old = await client.get("/v1/config/keys/k1", headers=headers)
        assert old.status_code == 200, old.text
        assert old.json()["key"] is None
        assert old.json()["name"] == "old"
        assert old.json()["hint"] == secret[-4:]
        assert old.json()["created"] > 10**12
        made = await client.post("/v1/config/keys", params={"type": "ingestion"}, headers=headers)
        assert made.status_code == 200
        again = await client.get(f"/v1/config/keys/{made.json()['id']}", headers=headers)
        assert again.json()["key"] == made.json()["key"]
        status = await client.get("/v1/config/ingestion/status", headers=headers)
        assert status.json()["status"] == "active"
    finally:
        await client.aclose()
        await lifespan.__aexit__(None, None, None)

    engine = create_async_engine(old_db)
    try:
        async with engine.begin() as connection:
            await connection.run_sync(_downgrade_to_0004)
            count = (await connection.execute(text("SELECT count(*) FROM api_keys"))).scalar()
            columns = await connection.run_sync(
                lambda sync: {c["name"] for c in inspect(sync).get_columns("accounts")}
            )
    finally:
        await engine.dispose()
    assert count == 2
    assert "ingestion_suspended_at" not in columns


def _downgrade_to_0004(connection: Connection) -> None:
    config = alembic_config()
    config.attributes["connection"] = connection
    command.downgrade(config, "0004")

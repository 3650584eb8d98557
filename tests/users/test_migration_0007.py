"""Migration 0007 on a database with data (SQLite and PostgreSQL): per-enterprise owner
rows with the same e-mail become one user, every owner a member of their account; the
enterprise API still lists an owner's accounts within the asking enterprise only; the
downgrade splits the user back per enterprise, and upgrading again works."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from sqlalchemy import Connection, text
from sqlalchemy.ext.asyncio import create_async_engine
from tests.conftest import make_settings, open_client
from tests.keys.test_migration import old_db

from tidegate.auth.secrets import MANAGEMENT_DOMAIN, hash_secret, new_enterprise_key
from tidegate.db.engine import Database
from tidegate.db.migrate import alembic_config, upgrade_database

__all__ = ["old_db"]

SEED = (
    "INSERT INTO enterprises (id, name, status, created_at) VALUES "
    "('e1', 'one', 'active', '2025-01-01 00:00:00'), ('e2', 'two', 'active', '2025-01-01 00:00:00')",
    "INSERT INTO users (id, enterprise_id, email, verified, created_at) VALUES "
    "('u1', 'e1', 'Same@Example.com', true, '2025-01-01 00:00:00'), "
    "('u2', 'e2', 'same@example.com', false, '2025-02-01 00:00:00'), "
    "('u3', 'e2', 'other@example.com', false, '2025-02-01 00:00:00')",
    "INSERT INTO accounts (id, enterprise_id, short_id, company, owner_id, plan_type, retention, "
    "status, enable_syslog, meta, created_at) VALUES "
    "('a1', 'e1', 's1', 'one', 'u1', 'enterprise', 30, 'active', false, '{}', '2025-01-01 00:00:00'), "
    "('a2', 'e2', 's2', 'two', 'u2', 'enterprise', 30, 'active', false, '{}', '2025-02-01 00:00:00'), "
    "('a3', 'e2', 's3', 'three', 'u3', 'enterprise', 30, 'active', false, '{}', '2025-02-01 00:00:00')",
)


async def _seed(url: str, token: str) -> None:
    await upgrade_database(url, "0006")
    db = Database.connect(url)
    try:
        async with db.write_sessions() as session:
            for statement in SEED:
                await session.execute(text(statement))
            await session.execute(
                text(
                    "INSERT INTO api_keys (id, kind, enterprise_id, name, key_hash, hint, "
                    "created_at) VALUES ('k2', 'enterprise', 'e2', 'k', :hash, 'x', "
                    "CURRENT_TIMESTAMP)"
                ),
                {"hash": hash_secret(token, domain=MANAGEMENT_DOMAIN)},
            )
            await session.commit()
    finally:
        await db.dispose()


async def _rows(url: str, sql: str) -> list[tuple[object, ...]]:
    engine = create_async_engine(url)
    try:
        async with engine.connect() as connection:
            return [tuple(row) for row in await connection.execute(text(sql))]
    finally:
        await engine.dispose()


def _downgrade(connection: Connection) -> None:
    config = alembic_config()
    config.attributes["connection"] = connection
    command.downgrade(config, "0006")


async def test_owners_merge_by_email_and_split_back(old_db: str, tmp_path: Path) -> None:
    token = new_enterprise_key()
    await _seed(old_db, token)
    await upgrade_database(old_db)

    users = await _rows(old_db, "SELECT id, email FROM users ORDER BY id")
    assert users == [("u1", "same@example.com"), ("u3", "other@example.com")]
    owners = await _rows(old_db, "SELECT id, owner_id FROM accounts ORDER BY id")
    assert owners == [("a1", "u1"), ("a2", "u1"), ("a3", "u3")]
    members = await _rows(
        old_db, "SELECT user_id, account_id, role FROM memberships ORDER BY account_id"
    )
    assert members == [("u1", "a1", "owner"), ("u1", "a2", "owner"), ("u3", "a3", "owner")]

    client, lifespan = await open_client(make_settings(old_db, tmp_path / "data"))
    try:
        headers = {"Authorization": f"Token {token}"}
        account = (await client.get("/v3/enterprise/account/a2", headers=headers)).json()["data"]
        # The user owns a1 too, but a1 is another enterprise's: never listed here.
        assert account["owner"]["accounts"] == ["s2"]
        assert account["owneremail"] == "same@example.com"
        listed = (await client.get("/v3/enterprise", headers=headers)).json()["data"]
        assert all(a["owner"]["accounts"] != ["s1", "s2"] for a in listed["accounts"])
    finally:
        await client.aclose()
        await lifespan.__aexit__(None, None, None)

    engine = create_async_engine(old_db)
    try:
        async with engine.begin() as connection:
            await connection.run_sync(_downgrade)
    finally:
        await engine.dispose()
    split = await _rows(
        old_db,
        "SELECT a.id, u.enterprise_id, u.email FROM accounts a JOIN users u "
        "ON u.id = a.owner_id ORDER BY a.id",
    )
    assert split == [
        ("a1", "e1", "same@example.com"),
        ("a2", "e2", "same@example.com"),
        ("a3", "e2", "other@example.com"),
    ]
    await upgrade_database(old_db)
    assert len(await _rows(old_db, "SELECT id FROM users")) == 2

"""Bring a database's schema up to date with Alembic, from code (no alembic.ini needed)."""

from __future__ import annotations

from alembic import command
from alembic.config import Config
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from tidegate.db.engine import ensure_sqlite_dir
from tidegate.db.sqlite_connect import WRITE_WAIT_S
from tidegate.logs.search_index import refresh_if_stale, reindex


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", "tidegate:migrations")
    return config


def _upgrade(connection: Connection, revision: str) -> None:
    if connection.dialect.name == "postgresql":
        # Several hosts may start at once; one migrates, the others wait and find it done.
        connection.execute(text("SELECT pg_advisory_xact_lock(7235401)"))
    config = alembic_config()
    config.attributes["connection"] = connection
    command.upgrade(config, revision)
    if revision == "head":
        refresh_if_stale(connection)


def _migration_engine(url: str) -> AsyncEngine:
    # On SQLite, a migration waits for the write lock as a writer does (a running
    # server's writers hold it briefly), without the writer's settings (sqlite_connect).
    if url.startswith("sqlite"):
        return create_async_engine(url, connect_args={"timeout": WRITE_WAIT_S})
    return create_async_engine(url)


async def upgrade_database(url: str, revision: str = "head") -> None:
    ensure_sqlite_dir(url)
    engine = _migration_engine(url)
    try:
        async with engine.begin() as connection:
            await connection.run_sync(_upgrade, revision)
    finally:
        await engine.dispose()


async def reindex_database(url: str) -> int:
    """Rebuild the search text of every line (``tidegate db reindex``); how many lines.
    One transaction: searches see the old index until it commits."""
    await upgrade_database(url)
    engine = _migration_engine(url)
    try:
        async with engine.begin() as connection:
            return await connection.run_sync(reindex)
    finally:
        await engine.dispose()

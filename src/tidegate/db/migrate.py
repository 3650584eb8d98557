"""Bring a database's schema up to date with Alembic, from code (no alembic.ini needed).

On SQLite the file is put in WAL mode before anything else, so it is never in rollback
mode while a server runs on it (writers set WAL too, but only when their first
connection opens: a new database stayed in rollback mode for the server's first seconds,
when every read waits for every writer). Several processes may start on one file (the
workers of several ``tidegate serve``); a migration that meets SQLite's "database is
locked" after the lock wait (SQLite answers so without waiting in a few documented
cases: another process closing the file's last connection and cleaning up its WAL, or
recovering the WAL after a crash) is tried again until ``MIGRATION_DEADLINE_S``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Protocol, TypeVar

from alembic import command
from alembic.config import Config
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from tidegate.db.engine import ensure_sqlite_dir
from tidegate.db.sqlite_connect import WRITE_WAIT_S

_log = logging.getLogger("tidegate.db")

T = TypeVar("T")

MIGRATION_DEADLINE_S = 120.0
_RETRY_PAUSE_S = 0.2


class SecretSealer(Protocol):
    """What migrations that seal data under the server secret are handed
    (``auth.secrets.Sealer``): migrations import nothing from the app."""

    def seal(self, secret: str) -> str: ...

    def open(self, sealed: str) -> str | None: ...


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", "tidegate:migrations")
    return config


def _upgrade(
    connection: Connection,
    revision: str,
    then: Callable[[Connection], object] | None,
    sealer: SecretSealer | None,
) -> None:
    if connection.dialect.name == "postgresql":
        # Several hosts may start at once; one migrates, the others wait and find it done.
        connection.execute(text("SELECT pg_advisory_xact_lock(7235401)"))
    config = alembic_config()
    config.attributes["connection"] = connection
    if sealer is not None:  # 0020 seals pipeline node configurations
        config.attributes["seal"] = sealer.seal
        config.attributes["open"] = sealer.open
    command.upgrade(config, revision)
    if then is not None:
        then(connection)


def _migration_engine(url: str) -> AsyncEngine:
    # On SQLite, a migration waits for the write lock as a writer does (a running
    # server's writers hold it briefly), without the writer's settings (sqlite_connect).
    if url.startswith("sqlite"):
        return create_async_engine(url, connect_args={"timeout": WRITE_WAIT_S})
    return create_async_engine(url)


def _is_locked(error: OperationalError) -> bool:
    return "database is locked" in str(error.orig)


async def upgrade_database(
    url: str,
    revision: str = "head",
    *,
    then: Callable[[Connection], object] | None = None,
    sealer: SecretSealer | None = None,
) -> None:
    """The schema at ``revision``; ``then(connection)`` runs in the migration's own
    transaction after it (what the layers above keep in step with the schema: the log
    store's search index, ``logs.schema_upkeep``). ``sealer``: the server secret's, for
    migrations that seal stored data (0020); without it they refuse a database that
    holds such data."""
    ensure_sqlite_dir(url)
    sqlite = url.startswith("sqlite")
    deadline = time.monotonic() + MIGRATION_DEADLINE_S
    while True:
        engine = _migration_engine(url)
        try:
            if sqlite:
                async with engine.connect() as connection:
                    await connection.exec_driver_sql("PRAGMA journal_mode=WAL")
            async with engine.begin() as connection:
                await connection.run_sync(_upgrade, revision, then, sealer)
            return
        except OperationalError as error:
            if not (sqlite and _is_locked(error)) or time.monotonic() >= deadline:
                raise
            _log.warning("the database is locked by another process; migrating again")
        finally:
            await engine.dispose()
        await asyncio.sleep(_RETRY_PAUSE_S)


async def in_one_transaction(url: str, work: Callable[[Connection], T]) -> T:
    """``work(connection)`` in one transaction on a migration's engine (schema-wide
    maintenance, such as rebuilding an index)."""
    engine = _migration_engine(url)
    try:
        async with engine.begin() as connection:
            return await connection.run_sync(work)
    finally:
        await engine.dispose()

"""Engines for SQLite (embedded default, WAL) and PostgreSQL (asyncpg).

SQLite gets two engines over the same file. Writers open their transaction with
BEGIN IMMEDIATE, so concurrent writers (several workers) queue on busy_timeout
instead of failing: a deferred transaction that reads and then writes gets
SQLITE_BUSY at once when another writer committed in between. Readers run in
autocommit (each statement its own snapshot, never waiting for the write lock) and
skip BEGIN, COMMIT and the pool's reset-on-return ROLLBACK: each of those is a hop
to aiosqlite's thread, and they were most of the cost of a cheap read.

Writers use ``synchronous=FULL`` by default: a commit (and so a 200 from ingestion) is
fsynced, surviving power loss as well as a crash. NORMAL in WAL mode survives a crash of
the process but may lose the last commits on power loss; TIDEGATE_SQLITE_SYNCHRONOUS
relaxes it (docs/ingest.md has the measured cost).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from tidegate.db.inline_sqlite import inline_connector

SQLITE_SYNCHRONOUS_MODES = ("OFF", "NORMAL", "FULL", "EXTRA")


# SQLite's companions of a database file; it creates them with the file's own mode.
_SQLITE_COMPANIONS = ("-wal", "-shm", "-journal")


def ensure_private_dir(path: Path) -> None:
    """Create ``path`` (mode 0700), or take group and other access away from it."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    _tighten(path)


def _tighten(path: Path) -> None:
    try:
        mode = path.stat().st_mode & 0o777
        if mode & 0o077:
            path.chmod(mode & 0o700)
    except FileNotFoundError:
        pass


def ensure_sqlite_dir(url: str) -> None:
    """The SQLite file holds every tenant's logs: only the server's user may read it.

    An empty file is an empty database to SQLite, so the file is created here with mode
    0600 rather than by SQLite with the umask's 0644; a loose existing file (and its
    -wal/-shm) is tightened. A new directory is 0700; an existing one is the operator's
    (``tidegate serve`` tightens the data directory itself)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return
    if parsed.database.startswith("file:"):
        return  # a URI filename (memory databases, options): SQLite's to interpret
    path = Path(parsed.database)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        # O_EXCL: never open (and so never close) a descriptor on an existing database:
        # closing any descriptor of a file drops every POSIX lock this process holds on
        # it, and another engine of the same process may be holding SQLite's locks.
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass
    for candidate in (path, *(Path(f"{path}{suffix}") for suffix in _SQLITE_COMPANIONS)):
        _tighten(candidate)


def _sqlite_engine(url: str, *, begin: str | None, synchronous: str = "NORMAL") -> AsyncEngine:
    if synchronous not in SQLITE_SYNCHRONOUS_MODES:
        raise ValueError(f"synchronous must be one of {SQLITE_SYNCHRONOUS_MODES}")
    if begin is None:
        # Reads: the stdlib driver inline on the loop (see inline_sqlite for why).
        path = make_url(url).database or ""
        # Inline connections cost no thread, so keep plenty: a pool smaller than the
        # number of requests in flight opens and closes overflow connections all the time.
        engine = create_async_engine(
            url,
            async_creator=inline_connector(path),
            pool_reset_on_return=None,
            pool_size=64,
            max_overflow=64,
        )
    else:
        engine = create_async_engine(url, connect_args={"timeout": 15})

    @event.listens_for(engine.sync_engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        # Take transaction control away from the driver so BEGIN is ours to emit.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA synchronous={synchronous}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=15000")
        cursor.close()

    if begin is not None:

        @event.listens_for(engine.sync_engine, "begin")
        def _begin(connection: Connection) -> None:
            connection.exec_driver_sql(begin)

    return engine


@dataclass(slots=True)
class Database:
    """The engines and session factories of one process."""

    url: str
    read_engine: AsyncEngine
    write_engine: AsyncEngine
    read_sessions: async_sessionmaker[AsyncSession]
    write_sessions: async_sessionmaker[AsyncSession]

    @classmethod
    def connect(cls, url: str, *, sqlite_synchronous: str = "FULL") -> Database:
        ensure_sqlite_dir(url)
        if url.startswith("sqlite"):
            read = _sqlite_engine(url, begin=None)
            write = _sqlite_engine(url, begin="BEGIN IMMEDIATE", synchronous=sqlite_synchronous)
        else:
            read = write = create_async_engine(
                url, pool_size=10, max_overflow=20, pool_pre_ping=True
            )
        return cls(
            url=url,
            read_engine=read,
            write_engine=write,
            read_sessions=async_sessionmaker(read, expire_on_commit=False, autoflush=False),
            write_sessions=async_sessionmaker(write, expire_on_commit=False, autoflush=False),
        )

    async def dispose(self) -> None:
        await self.read_engine.dispose()
        if self.write_engine is not self.read_engine:
            await self.write_engine.dispose()

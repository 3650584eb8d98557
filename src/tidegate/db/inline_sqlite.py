"""SQLite reads executed inline on the event loop, for the read engine only.

aiosqlite runs every call on a worker thread: a cursor, an execute, a fetch and a close
are four round trips between threads per query, and on a small machine those hand-offs
were nearly all the cost of a cheap authenticated read (about 13 per request). A read in
WAL mode never waits for a lock and takes microseconds, so the read engine runs the
stdlib driver directly on the loop instead. Writes keep aiosqlite: they can wait on the
write lock (busy_timeout), which must never block the loop.

The objects below offer the part of aiosqlite's interface that SQLAlchemy's aiosqlite
adapter uses (its versions are pinned in the lock file; the whole test suite runs every
read through this path).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from tidegate.db.sqlite_connect import READ_ENGINE_WAIT_S, open_reader


class InlineCursor:
    def __init__(self, cursor: sqlite3.Cursor) -> None:
        self._cursor = cursor

    async def __aenter__(self) -> InlineCursor:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        self._cursor.close()

    @property
    def description(self) -> Any:
        return self._cursor.description

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    @property
    def lastrowid(self) -> int | None:
        return self._cursor.lastrowid

    @property
    def arraysize(self) -> int:
        return self._cursor.arraysize

    @arraysize.setter
    def arraysize(self, value: int) -> None:
        self._cursor.arraysize = value

    async def execute(self, sql: str, parameters: Sequence[Any] | None = None) -> InlineCursor:
        self._cursor.execute(sql, () if parameters is None else parameters)
        return self

    async def executemany(self, sql: str, parameters: Iterable[Sequence[Any]]) -> InlineCursor:
        self._cursor.executemany(sql, parameters)
        return self

    async def fetchone(self) -> Any:
        return self._cursor.fetchone()

    async def fetchmany(self, size: int | None = None) -> list[Any]:
        return self._cursor.fetchmany(self._cursor.arraysize if size is None else size)

    async def fetchall(self) -> list[Any]:
        return self._cursor.fetchall()

    async def close(self) -> None:
        self._cursor.close()


class _RunNow:
    """Stands in for aiosqlite's queue to its worker thread: runs the call at once."""

    def put_nowait(self, item: tuple[asyncio.Future[Any] | None, Callable[[], Any]]) -> None:
        future, function = item
        try:
            result = function()
        except BaseException as error:  # handed to the awaiting caller, as aiosqlite does
            if future is not None:
                future.set_exception(error)
            return
        if future is not None:
            future.set_result(result)


class InlineConnection:
    def __init__(self, connection: sqlite3.Connection) -> None:
        self._conn = connection
        self._connection = connection
        self._tx = _RunNow()

    @property
    def isolation_level(self) -> str | None:
        return self._conn.isolation_level

    def cursor(self) -> InlineCursor:
        return InlineCursor(self._conn.cursor())

    async def execute(self, sql: str, parameters: Sequence[Any] | None = None) -> InlineCursor:
        return await InlineCursor(self._conn.cursor()).execute(sql, parameters)

    async def create_function(self, *args: Any, **kwargs: Any) -> None:
        self._conn.create_function(*args, **kwargs)

    async def commit(self) -> None:
        self._conn.commit()

    async def rollback(self) -> None:
        self._conn.rollback()

    async def close(self) -> None:
        self._conn.close()

    def stop(self) -> None:
        self._conn.close()


def inline_connector(path: str) -> Callable[[], Any]:
    """An ``async_creator`` for create_async_engine: a read connection on ``path``."""

    async def connect() -> InlineConnection:
        # Not query_only: SQLAlchemy's session runs its own bookkeeping through it.
        # The wait is the one these connections have always had (the write engine's
        # pragmas used to be applied to them too), not READ_ON_LOOP_WAIT_S: shortening
        # it is a change of behaviour, to be tried under load on its own.
        connection = open_reader(path, wait_s=READ_ENGINE_WAIT_S, query_only=False, any_thread=True)
        return InlineConnection(connection)

    return connect

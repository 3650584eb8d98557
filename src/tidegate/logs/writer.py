"""Group commit: the lines that concurrent requests of one worker store go to the
database in one transaction.

A writer of lines (ingestion, the pipeline's log_analysis destination) builds its rows
off the event loop (``StoreBatch.of``) and hands them to the process's ``LineWriter``,
then waits. The writer commits what is pending once ``max_lines`` lines wait or
``delay_s`` after the oldest of them arrived, whichever comes first, one transaction
at a time: while one commits, the next group gathers, so under load groups grow by
themselves. ``write`` returns only once the transaction holding its lines, and the
usage they add (summed per account and day in the same transaction), has committed:
an answer sent after it still means the lines are durable.

One write is all or nothing: the batches it hands over (one per account) commit in
the same transaction. When a group's transaction fails, its writes are committed again
one by one, so a write the database refuses fails alone and its neighbours are stored.
A database that cannot serve now (``store_unavailable``: locked, unreachable, pool
exhausted) fails the whole group at once: committing each write alone would only wait
out the same outage once per write.

On PostgreSQL the writer also tells its ``PartitionAnalyzer`` (tidegate.logs.analyze) the
rows each commit added per partition; past a threshold it analyzes the partition later,
in a task and on a connection of its own, never inside a write's transaction.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from tidegate import metrics
from tidegate.api.error_handlers import store_unavailable
from tidegate.db.engine import Database, pg_connection_lost
from tidegate.db.sqlite_connect import open_writer
from tidegate.errors import ServiceUnavailable
from tidegate.logs.analyze import PartitionAnalyzer
from tidegate.logs.store import (
    StoreBatch,
    batch_days,
    ensure_partitions,
    pg_write,
    rows_by_day,
    sqlite_write,
)

log = logging.getLogger(__name__)

DEFAULT_DELAY_S = 0.002
DEFAULT_MAX_LINES = 5_000
_SQLITE_CACHE_KIB = 64 * 1024


@dataclass(slots=True)
class _Write:
    batches: Sequence[StoreBatch]
    lines: int
    since: float
    done: asyncio.Future[None]


class LineWriter:
    """The one writer of log lines of a process (one per ``Database``)."""

    def __init__(
        self,
        db: Database,
        *,
        delay_s: float = DEFAULT_DELAY_S,
        max_lines: int = DEFAULT_MAX_LINES,
        analyzer: PartitionAnalyzer | None = None,
    ) -> None:
        """``analyzer`` (PostgreSQL): what keeps the statistics of the partitions this
        writer fills current (``tidegate.logs.analyze``); one with the default thresholds
        when not given."""
        if db.sqlite_path is None and not db.url.startswith("postgresql"):
            raise ValueError("the writer of lines needs an SQLite file or PostgreSQL")
        self._db = db
        self.delay_s = max(0.0, delay_s)
        self.max_lines = max(1, max_lines)
        self._pending: deque[_Write] = deque()
        self._pending_lines = 0
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        # The writer's own connection: SQLite's on a thread of its own, or PostgreSQL's.
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="tidegate-line-writer")
        self._sqlite: sqlite3.Connection | None = None
        self._pg: Any = None
        self.analyzer = None if db.sqlite_path is not None else analyzer or PartitionAnalyzer(db)
        # Transactions committed, and how many writes they held (for tests and logs).
        self.groups = 0
        self.grouped_writes = 0

    @property
    def numbers_lines(self) -> bool:
        """Whether every write learns its rows' ids for free (SQLite's writer numbers
        them); else a batch asks for them (``StoreBatch.want_ids``)."""
        return self._db.sqlite_path is not None

    async def write(self, batches: Sequence[StoreBatch]) -> None:
        """Store ``batches`` in one transaction with whatever else is pending; returns
        once it has committed, raises what made it fail."""
        if self._closing:
            raise ServiceUnavailable(
                "The server is shutting down; retry shortly", headers={"Retry-After": "1"}
            )
        loop = asyncio.get_running_loop()
        lines = sum(len(batch.rows) for batch in batches)
        item = _Write(batches, lines, loop.time(), loop.create_future())
        self._pending.append(item)
        self._pending_lines += lines
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="tidegate-line-writer")
        if len(self._pending) == 1 or self._pending_lines >= self.max_lines:
            self._wakeup.set()
        # Shielded: a caller that goes away (a client hanging up) leaves its lines to be
        # committed with the group rather than pulled out of a transaction under way.
        await asyncio.shield(item.done)

    async def close(self) -> None:
        """Commit everything pending, then stop and close the writer's connection."""
        self._closing = True
        self._wakeup.set()
        if self._task is not None:
            await self._task
            self._task = None
        if self.analyzer is not None:
            await self.analyzer.close()
        if self._sqlite is not None:
            await asyncio.get_running_loop().run_in_executor(self._thread, self._sqlite.close)
            self._sqlite = None
        self._thread.shutdown(wait=False)
        if self._pg is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._pg.close(), timeout=5)
            self._pg = None

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            if not self._pending:
                if self._closing:
                    return
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            wait = self._pending[0].since + self.delay_s - loop.time()
            if wait > 0 and self._pending_lines < self.max_lines and not self._closing:
                self._wakeup.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(wait):
                        await self._wakeup.wait()
                continue
            await self._commit_group(self._take())

    def _take(self) -> list[_Write]:
        """The oldest pending writes, up to ``max_lines`` lines (at least one write)."""
        group = [self._pending.popleft()]
        lines = group[0].lines
        while self._pending and lines + self._pending[0].lines <= self.max_lines:
            item = self._pending.popleft()
            group.append(item)
            lines += item.lines
        self._pending_lines -= lines
        return group

    async def _commit_group(self, group: list[_Write]) -> None:
        try:
            started = time.perf_counter()
            try:
                await self._commit([batch for item in group for batch in item.batches])
            except Exception as error:
                metrics.GROUP_COMMITS.labels("failed").inc()
                if len(group) == 1 or store_unavailable(error):
                    for item in group:
                        _fail(item, error)
                    return
                log.warning(
                    "a group of %d writes failed (%s); committing them one by one",
                    len(group),
                    type(error).__name__,
                )
                for item in group:
                    try:
                        await self._commit(item.batches)
                    except Exception as own:
                        _fail(item, own)
                    else:
                        _succeed(item)
                return
            self.groups += 1
            self.grouped_writes += len(group)
            _observe_group(group, started)
            for item in group:
                _succeed(item)
        except BaseException:
            # Cancelled mid-commit: nobody may wait forever for an answer.
            for item in group:
                _fail(item, ServiceUnavailable("The write was interrupted; retry shortly"))
            raise

    async def _commit(self, batches: Sequence[StoreBatch]) -> None:
        if self._db.sqlite_path is not None:
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(self._thread, self._sqlite_commit, batches)
            return
        await ensure_partitions(self._db.write_engine, batch_days(batches))
        transaction = await self._pg_begin()
        try:
            await pg_write(self._pg, batches)
        except BaseException:
            try:
                await transaction.rollback()
            except BaseException:
                # The connection's state is unknown: the next group opens another.
                self._pg.terminate()
            raise
        await transaction.commit()
        if self.analyzer is not None:
            # Committed: the analysis runs later, in the analyzer's own task.
            self.analyzer.added(rows_by_day(batches))

    async def _pg_begin(self) -> Any:
        """BEGIN on the writer's connection. One the server has cut since the last group
        (a restart) is replaced once: safe, since nothing of this group was sent yet."""
        try:
            return await self._pg_start()
        except pg_connection_lost():
            if self._pg is not None:
                self._pg.terminate()
                self._pg = None
            return await self._pg_start()

    async def _pg_start(self) -> Any:
        if self._pg is None or self._pg.is_closed():
            self._pg = await self._db.pg_connection()
        transaction = self._pg.transaction()
        await transaction.start()
        return transaction

    def _sqlite_commit(self, batches: Sequence[StoreBatch]) -> None:
        """One transaction on the writer's own connection, in the writer's thread (it
        may wait up to the busy timeout for the write lock another process holds)."""
        if self._sqlite is None:
            assert self._db.sqlite_path is not None
            self._sqlite = open_writer(self._db.sqlite_path, self._db.sqlite_synchronous)
            # The writer's pages stay cached between its transactions (no other
            # connection of this process writes lines); SQLite allocates it as used.
            self._sqlite.execute(f"PRAGMA cache_size=-{_SQLITE_CACHE_KIB}")
        connection = self._sqlite
        connection.execute("BEGIN IMMEDIATE")
        try:
            sqlite_write(connection, batches)
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise


def _observe_group(group: list[_Write], started: float) -> None:
    """docs/metrics.md: the group's size, its transaction's time, each write's wait."""
    now = time.perf_counter()
    metrics.GROUP_COMMITS.labels("ok").inc()
    metrics.GROUP_COMMIT_SECONDS.observe(now - started)
    metrics.GROUP_COMMIT_WRITES.observe(len(group))
    metrics.GROUP_COMMIT_LINES.observe(sum(item.lines for item in group))
    # ``since`` is the loop's clock (monotonic, like perf_counter, but not the same one).
    loop_now = asyncio.get_running_loop().time()
    for item in group:
        metrics.GROUP_COMMIT_WAIT_SECONDS.observe(max(0.0, loop_now - item.since))


def _succeed(item: _Write) -> None:
    if not item.done.done():
        item.done.set_result(None)
        for batch in item.batches:
            metrics.lines_committed(
                lines_stored=batch.lines_stored,
                bytes_stored=batch.bytes_stored,
                lines_excluded=batch.lines_excluded,
                bytes_excluded=batch.bytes_excluded,
                lines_repaired=batch.lines_fallback,
            )


def _fail(item: _Write, error: BaseException) -> None:
    if not item.done.done():
        item.done.set_exception(error)
        for batch in item.batches:
            metrics.lines_failed(
                batch.lines_stored + batch.lines_excluded,
                batch.bytes_stored + batch.bytes_excluded,
            )

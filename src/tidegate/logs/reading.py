"""Running an export page off the event loop.

A page may hold 10,000 lines of any size (and a filtered page scans up to 100,000), so
reading it, decoding each row's JSON, matching filters, sealing the cursor and encoding
the answer can take seconds of CPU. A worker's event loop serves every tenant, so all of
that runs in a worker thread: ``run_off_loop(page)`` runs ``page(reader)`` on one of
``EXPORT_THREADS`` threads per process (a page waits its turn beyond that, without
holding anything but its request).

The reader gives the page its rows, synchronously, in that thread, a batch at a time
(``FETCH_BATCH``): the page stops reading where it is full, so a page of huge lines
never holds more rows than it uses plus one batch.

- SQLite: a stdlib ``sqlite3`` connection opened in the thread for the page (WAL: a
  reader never waits for writers; autocommit, so each query is its own snapshot, like
  the app's read engine). The app's read engine runs the driver inline on the loop,
  which suits tiny management reads but not a page of arbitrary-size lines.
- PostgreSQL: asyncpg's I/O belongs to the loop, so the thread hands each query (and
  each batch of a server-side cursor) to the loop (``run_coroutine_threadsafe``) and
  waits for the raw rows; the loop only moves bytes, everything else stays in the
  thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Generator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from sqlalchemy import Select, text
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.db.engine import Database
from tidegate.db.read_budget import SQLITE_PROGRESS_EVERY, ReadBudget
from tidegate.db.sqlite_connect import READ_OFF_LOOP_WAIT_S, open_reader
from tidegate.errors import ReadBudgetExceeded
from tidegate.logs.fair_share import FairShare, HeavyReaders, lower_priority
from tidegate.logs.read_queries import LineRow, as_line_row
from tidegate.logs.segments import duckdb_connection

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection

    from tidegate.logs.segment_cache import SegmentCache

T = TypeVar("T")

# Pages in progress per process; more wait. Two keep one big export from starving the
# others without letting exports take every core from ingestion.
EXPORT_THREADS = 2
# Of which one account may hold at most this many: the other thread is always there
# for everyone else (docs/fair-reads.md).
READS_PER_ACCOUNT = max(1, EXPORT_THREADS - 1)
THREAD_NAME_PREFIX = "tidegate-export"
# How long the thread waits for the loop to run one PostgreSQL query (statement
# timeouts end a stuck query well before this; it only keeps a thread from hanging
# forever if the loop is gone).
LOOP_QUERY_TIMEOUT_S = 300.0
# Rows fetched at a time by ``PageReader.rows``.
FETCH_BATCH = 256

_CUSTOM_PLANS = text("SET LOCAL plan_cache_mode = force_custom_plan")
# The same, and the read's budget for each statement of its transaction: one round trip.
_CUSTOM_PLANS_AND_BUDGET = text(
    "SELECT set_config('plan_cache_mode', 'force_custom_plan', true), "
    "set_config('statement_timeout', :timeout_ms, true)"
)
HEAVY_THREAD_NAME_PREFIX = "tidegate-export-heavy"
# A read that took more CPU than this in its thread makes its account's reads run at a
# lower CPU priority for a while (docs/fair-reads.md, "CPU").
HEAVY_READ_CPU_S = 0.25
HEAVY_FOR_S = 60.0
_executor = ThreadPoolExecutor(max_workers=EXPORT_THREADS, thread_name_prefix=THREAD_NAME_PREFIX)
# The same number of threads for heavy accounts' reads, at a lower priority: the share
# (``_share``) still admits at most EXPORT_THREADS reads at once over both.
_heavy_executor = ThreadPoolExecutor(
    max_workers=EXPORT_THREADS,
    thread_name_prefix=HEAVY_THREAD_NAME_PREFIX,
    initializer=lower_priority,
)
_share = FairShare(capacity=EXPORT_THREADS, per_account=READS_PER_ACCOUNT)
_heavy = HeavyReaders(cpu_s=HEAVY_READ_CPU_S, for_s=HEAVY_FOR_S)
# PostgreSQL's SQLSTATE of a statement cancelled by statement_timeout.
_QUERY_CANCELED = "57014"
_SQLITE = sqlite.dialect()


class PageAbandoned(Exception):
    """The request went away: the page stops at its next query."""


class SegmentReader(Protocol):
    def segment_rows(
        self, sql: str, parameters: Sequence[Any]
    ) -> Generator[tuple[Any, ...], None, None]:
        """A DuckDB statement's rows over segment files, within the read's budget."""
        ...


class PageReader(SegmentReader, Protocol):
    """Runs one statement of tidegate.logs.read_queries; called in the worker thread."""

    dialect: str  # "sqlite" or "postgresql", as tidegate.logs.sql_filter names them
    # Where the log store's segments are (None: reads leave them out), and with a
    # segment bucket, this host's copies of them.
    segment_dir: Path | None
    segment_cache: SegmentCache | None

    def scalar(self, statement: Select[*tuple[Any, ...]]) -> Any: ...

    def all(self, statement: Select[*tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        """Every row of a statement with a small answer (counts), as plain tuples."""
        ...

    def rows(self, statement: Select[*tuple[Any, ...]]) -> Generator[LineRow, None, None]:
        """The statement's rows as they are read; close the iterator to stop early."""
        ...


class SegmentStatements:
    """The DuckDB statements of one read (the log store's segments), within its budget.

    DuckDB counts no steps and calls nothing back while it works, so the budget is wall
    time, ``ReadBudget.segment_s`` over all the read's segment statements: a timer
    interrupts the statement running when it is spent (``interrupt`` is safe from any
    thread; the next statement of the connection starts clean), and the time is also
    checked before each batch of rows, so what the read does with the rows in Python
    while the statement is open (confirming a filter's candidates) counts too."""

    def __init__(self, budget_s: float) -> None:
        self._left_s = budget_s if budget_s > 0 else None
        self._lock = threading.Lock()
        self._running: DuckDBPyConnection | None = None
        self._over_budget = False
        self._stopped = False

    def segment_rows(
        self, sql: str, parameters: Sequence[Any]
    ) -> Generator[tuple[Any, ...], None, None]:
        connection = duckdb_connection()
        with self._lock:
            if self._stopped:
                raise PageAbandoned
            self._running = connection
        started = time.monotonic()
        timer = None
        if self._left_s is not None:
            timer = threading.Timer(self._left_s, self._spent)
            timer.daemon = True
            timer.start()
        try:
            result = connection.execute(sql, list(parameters))
            while True:
                if self._left_s is not None and time.monotonic() - started > self._left_s:
                    self._over_budget = True
                    raise ReadBudgetExceeded
                batch = result.fetchmany(FETCH_BATCH)
                if not batch:
                    return
                yield from batch
        except Exception as error:
            if not _interrupted(error):
                raise
            if self._stopped:
                raise PageAbandoned from None
            if self._over_budget:
                raise ReadBudgetExceeded from None
            raise
        finally:
            with self._lock:
                self._running = None
            if timer is not None:
                timer.cancel()
            if self._left_s is not None:
                self._left_s -= time.monotonic() - started

    def _spent(self) -> None:
        """The timer's: the budget is spent while a statement runs."""
        with self._lock:
            if self._running is not None:
                self._over_budget = True
                self._running.interrupt()

    def stop(self) -> None:
        """From the loop: the request went away."""
        with self._lock:
            self._stopped = True
            if self._running is not None:
                self._running.interrupt()


def _interrupted(error: BaseException) -> bool:
    duckdb = sys.modules.get("duckdb")
    return duckdb is not None and isinstance(error, duckdb.InterruptException)


class SqliteReader:
    """The stdlib driver on a connection of the worker thread's own."""

    dialect = "sqlite"
    segment_dir: Path | None = None
    segment_cache: SegmentCache | None = None
    snapshot = False

    def __init__(self, path: str, budget: ReadBudget | None = None) -> None:
        self._path = path
        self._connection: sqlite3.Connection | None = None
        self._stopped = False
        self._budget = (budget or ReadBudget()).sqlite_steps
        self.steps = 0  # the VM steps of the read so far, in SQLITE_PROGRESS_EVERY units
        self._over_budget = False
        self._segments = SegmentStatements((budget or ReadBudget()).segment_s)

    def _progress(self) -> int:
        """SQLite's progress handler: a non-zero answer interrupts the statement."""
        self.steps += SQLITE_PROGRESS_EVERY
        if self._budget and self.steps > self._budget:
            self._over_budget = True
        return int(self._stopped or self._over_budget)

    @contextlib.contextmanager
    def _interruptible(self) -> Generator[None, None, None]:
        try:
            yield
        except sqlite3.OperationalError:
            if self._stopped:
                raise PageAbandoned from None
            if self._over_budget:
                raise ReadBudgetExceeded from None
            raise

    def stop(self) -> None:
        """From the loop: abandon the page (``interrupt`` is safe from any thread)."""
        self._stopped = True
        self._segments.stop()
        connection = self._connection
        if connection is not None:
            # The thread may be closing it right now; then there is nothing to stop.
            with contextlib.suppress(sqlite3.ProgrammingError):
                connection.interrupt()

    def _execute(self, statement: Select[*tuple[Any, ...]]) -> sqlite3.Cursor:
        if self._stopped:
            raise PageAbandoned
        if self._connection is None:
            connection = open_reader(self._path, wait_s=READ_OFF_LOOP_WAIT_S)
            connection.set_progress_handler(self._progress, SQLITE_PROGRESS_EVERY)
            if self.segment_dir is not None:
                # One snapshot for every statement of the page (WAL: the first read
                # takes it), so the segment list and the row store's rows agree
                # (docs/log-store.md, "Segments"); the page's end rolls it back.
                connection.execute("BEGIN")
                self.snapshot = True
            self._connection = connection
        # render_postcompile: IN lists (a filter's hosts, apps, levels) as plain parameters.
        compiled = statement.compile(dialect=_SQLITE, compile_kwargs={"render_postcompile": True})
        bound = compiled.params
        parameters = [bound[name] for name in compiled.positiontup or ()]
        with self._interruptible():
            return self._connection.execute(str(compiled), parameters)

    def scalar(self, statement: Select[*tuple[Any, ...]]) -> Any:
        cursor = self._execute(statement)
        with self._interruptible():
            row = cursor.fetchone()
        return None if row is None else row[0]

    def all(self, statement: Select[*tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        cursor = self._execute(statement)
        with self._interruptible():
            return cursor.fetchall()

    def rows(self, statement: Select[*tuple[Any, ...]]) -> Generator[LineRow, None, None]:
        cursor = self._execute(statement)
        try:
            while batch := self._fetch(cursor):
                yield from map(as_line_row, batch)
                if self._stopped:
                    raise PageAbandoned
        finally:
            cursor.close()

    def _fetch(self, cursor: sqlite3.Cursor) -> list[Any]:
        with self._interruptible():
            return cursor.fetchmany(FETCH_BATCH)

    def segment_rows(
        self, sql: str, parameters: Sequence[Any]
    ) -> Generator[tuple[Any, ...], None, None]:
        return self._segments.segment_rows(sql, parameters)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


class LoopReader:
    """Asks the event loop to run each statement on the request's (asyncpg) session."""

    dialect = "postgresql"
    segment_dir: Path | None = None
    segment_cache: SegmentCache | None = None
    # Whether the page's statements share one snapshot (REPEATABLE READ).
    snapshot = False

    def __init__(
        self,
        session: AsyncSession,
        loop: asyncio.AbstractEventLoop,
        budget: ReadBudget | None = None,
    ) -> None:
        self._session = session
        self._loop = loop
        self._timeout_ms = (budget or ReadBudget()).timeout_ms
        self._stopped = False
        self._planned_per_call = False
        self._started: float | None = None
        self._segments = SegmentStatements((budget or ReadBudget()).segment_s)

    def stop(self) -> None:
        """On the loop: the request's session is being closed, so use it no more."""
        self._stopped = True
        self._segments.stop()

    def segment_rows(
        self, sql: str, parameters: Sequence[Any]
    ) -> Generator[tuple[Any, ...], None, None]:
        return self._segments.segment_rows(sql, parameters)

    def _on_loop(self, work: Callable[[], Awaitable[T]], *, budgeted: bool = True) -> T:
        # Each statement is cut off past the budget (statement_timeout), and so is the
        # read whose statements together took longer: no read runs for a budget a
        # statement, however many statements it makes.
        now = time.monotonic()
        if self._started is None:
            self._started = now
        elif budgeted and self._timeout_ms and (now - self._started) * 1000 > self._timeout_ms:
            raise ReadBudgetExceeded

        async def run() -> T:
            if self._stopped:
                raise PageAbandoned
            if not self._planned_per_call:
                if not self._session.in_transaction():
                    # One snapshot for every statement of the page: the segment list
                    # and the row store's rows agree (docs/log-store.md, "Segments").
                    await self._session.connection(
                        execution_options={"isolation_level": "REPEATABLE READ"}
                    )
                    self.snapshot = True
                # A search literal is a parameter: a cached generic plan would treat a
                # rare literal and a common one alike (the trigram index or the time
                # index for both). Each statement of the page's transaction is planned
                # with its values instead.
                if self._timeout_ms:
                    await self._session.execute(
                        _CUSTOM_PLANS_AND_BUDGET, {"timeout_ms": str(self._timeout_ms)}
                    )
                else:
                    await self._session.execute(_CUSTOM_PLANS)
                self._planned_per_call = True
            return await work()

        future = asyncio.run_coroutine_threadsafe(run(), self._loop)
        try:
            return future.result(timeout=LOOP_QUERY_TIMEOUT_S)
        except DBAPIError as error:
            if _sqlstate(error) == _QUERY_CANCELED:
                raise ReadBudgetExceeded from None
            raise

    def scalar(self, statement: Select[*tuple[Any, ...]]) -> Any:
        async def fetch() -> Any:
            return (await self._session.execute(statement)).scalar()

        return self._on_loop(fetch)

    def all(self, statement: Select[*tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        async def fetch() -> list[tuple[Any, ...]]:
            return [tuple(row) for row in await self._session.execute(statement)]

        return self._on_loop(fetch)

    def rows(self, statement: Select[*tuple[Any, ...]]) -> Generator[LineRow, None, None]:
        # A server-side cursor, read a batch per trip to the loop.
        result = self._on_loop(lambda: self._session.stream(statement))

        async def batch() -> list[tuple[Any, ...]]:
            return [tuple(row) for row in await result.fetchmany(FETCH_BATCH)]

        try:
            while rows := self._on_loop(batch):
                yield from map(as_line_row, rows)
        finally:
            if not self._stopped:  # else the request is closing the session itself
                self._on_loop(result.close, budgeted=False)

    def close(self) -> None:
        pass


def _sqlstate(error: DBAPIError) -> str | None:
    """The SQLSTATE of a PostgreSQL error, through SQLAlchemy's and asyncpg's wrappers."""
    cause: BaseException | None = error.orig
    while cause is not None:
        state = getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)
        if isinstance(state, str):
            return state
        cause = cause.__cause__
    return None


async def run_off_loop(
    *,
    database: Database,
    session: AsyncSession,
    account_id: str,
    page: Callable[[PageReader], T],
) -> T:
    """Runs ``page(reader)`` in an export worker thread, within the database's read
    budget and ``account_id``'s share of the threads (on a thread of lower priority
    while the account's reads are heavy), and returns its result."""
    loop = asyncio.get_running_loop()
    url = make_url(database.url)
    reader: SqliteReader | LoopReader
    if url.get_backend_name() == "sqlite":
        reader = SqliteReader(url.database or "", database.read_budget)
    else:
        reader = LoopReader(session, loop, database.read_budget)
    reader.segment_dir = database.segment_dir
    reader.segment_cache = database.segment_cache

    heavy_cpu_s = database.read_budget.heavy_read_cpu_s

    def work() -> T:
        started = time.thread_time()
        try:
            return page(reader)
        finally:
            reader.close()
            if heavy_cpu_s > 0:
                _heavy.read_took(
                    account_id,
                    time.thread_time() - started,
                    time.monotonic(),
                    threshold_s=heavy_cpu_s,
                )

    await _share.acquire(account_id)
    try:
        heavy = _heavy.is_heavy(account_id, time.monotonic())
        running = (_heavy_executor if heavy else _executor).submit(work)
    except BaseException:
        _share.release(account_id)
        raise
    # The slot is the thread's until the page is over, even when the request goes away.
    running.add_done_callback(lambda _done: _share.release(account_id))
    try:
        return await asyncio.wrap_future(running)
    except asyncio.CancelledError:
        reader.stop()
        raise

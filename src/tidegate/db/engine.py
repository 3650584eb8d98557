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

PostgreSQL connections carry a ``statement_timeout`` and the pool a checkout timeout,
so an overloaded or unreachable database answers 503 (api/error_handlers.py) within a
bound instead of holding requests open.

``Database.fetch`` is the hot read path (credentials, the account read): a prebuilt
Core SELECT run with the stdlib driver directly on one autocommit connection on SQLite,
and on PostgreSQL with asyncpg from a small pool of its own (asyncpg prepares and caches
each statement per connection; the pool skips the reset round trip on release, since
these connections only ever run single SELECTs outside a transaction).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
from collections import namedtuple
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import cached_property, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import orjson
from sqlalchemy import JSON, Boolean, Date, DateTime, Select, bindparam, event, select
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.dialects.postgresql import asyncpg as asyncpg_dialect
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.pool import QueuePool
from sqlalchemy.types import TypeDecorator, TypeEngine

from tidegate import metrics
from tidegate.db.inline_sqlite import inline_connector
from tidegate.db.read_budget import ReadBudget
from tidegate.db.sqlite_connect import (
    READ_ON_LOOP_WAIT_S,
    SYNCHRONOUS_MODES,
    WRITE_WAIT_S,
    apply_writer_settings,
    open_reader,
)

if TYPE_CHECKING:
    from tidegate.logs.segment_cache import SegmentCache
    from tidegate.logs.segment_objects import SegmentObjects

_log = logging.getLogger("tidegate.db")

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


def _sqlite_read_engine(url: str) -> AsyncEngine:
    """Reads: the stdlib driver inline on the loop (see inline_sqlite for why)."""
    # Inline connections cost no thread (nor a server's connection: this is SQLite's
    # in-process file), so keep plenty: a pool smaller than the number of requests in
    # flight opens and closes overflow connections all the time.
    return create_async_engine(
        url,
        async_creator=inline_connector(make_url(url).database or ""),
        pool_reset_on_return=None,
        pool_size=64,
        max_overflow=64,
    )


# How long a write waits for its process's turn at SQLite's write lock before a 503.
SQLITE_WRITE_QUEUE_S = 30.0


def _sqlite_write_engine(url: str, synchronous: str) -> AsyncEngine:
    """Writes: aiosqlite (a write may wait for the lock, never on the loop), each
    transaction opened with BEGIN IMMEDIATE."""
    if synchronous not in SYNCHRONOUS_MODES:
        raise ValueError(f"synchronous must be one of {SYNCHRONOUS_MODES}")
    # One connection per process: SQLite has one write lock, and its busy handler is a
    # sleep-and-retry (up to 100 ms between tries), not a queue, so with every request
    # of four workers trying for it a writer that slept through the releases could wait
    # out its whole busy timeout (a 503) while later arrivals wrote: 1 of 400 account
    # creations under load, p99 9.4 s. Here the process's writers queue in order for
    # the one connection (the pool's waiters are served first come, first served) and
    # only the workers' one writer each, the group writer and the tools compete for the
    # lock. A write session holds the connection exactly while it holds the lock (from
    # its first statement, BEGIN IMMEDIATE, to its commit), so nothing that worked with
    # more connections waits on itself here: a second write session inside one that has
    # written would have waited for SQLite's lock just the same.
    engine = create_async_engine(
        url,
        connect_args={"timeout": WRITE_WAIT_S},
        pool_size=1,
        max_overflow=0,
        pool_timeout=SQLITE_WRITE_QUEUE_S,
    )

    @event.listens_for(engine.sync_engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        apply_writer_settings(dbapi_connection, synchronous)

    @event.listens_for(engine.sync_engine, "begin")
    def _begin(connection: Connection) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


# PostgreSQL connections of one worker process (docs/decisions.md, "PostgreSQL
# connections"): the SQLAlchemy pool (size + overflow), the asyncpg pool of the hot
# reads (Database.fetch) and the group writer's own connection.
@dataclass(frozen=True, slots=True)
class PoolPlan:
    pool_size: int
    max_overflow: int
    fetch_pool: int

    @property
    def per_worker(self) -> int:
        return self.pool_size + self.max_overflow + self.fetch_pool + 1

    @classmethod
    def of(cls, total: int) -> PoolPlan:
        """``total`` connections split as the default is (10 + 20 + 10 + 1)."""
        if total < MIN_CONNECTIONS_PER_WORKER:
            raise PoolBudgetError(
                f"a worker needs at least {MIN_CONNECTIONS_PER_WORKER} PostgreSQL "
                f"connections, not {total}"
            )
        fetch = max(1, min(10, total // 4))
        engine = total - fetch - 1
        size = max(1, engine // 3)
        return cls(pool_size=size, max_overflow=engine - size, fetch_pool=fetch)


MIN_CONNECTIONS_PER_WORKER = 4
DEFAULT_POOL_PLAN = PoolPlan(pool_size=10, max_overflow=20, fetch_pool=10)


class PoolBudgetError(Exception):
    """PostgreSQL does not allow the connections the workers would need."""


def other_clients_headroom(max_connections: int) -> int:
    """Connections left to everything else (psql, backups, migrations, monitoring)."""
    return max(5, max_connections // 10)


def plan_pools(*, max_connections: int, reserved: int, workers: int) -> PoolPlan:
    """Each worker's share of ``max_connections`` less the superuser-reserved ones and
    the other clients' headroom, at most the default plan; refused below the minimum."""
    budget = max_connections - reserved - other_clients_headroom(max_connections)
    share = budget // max(1, workers)
    if share < MIN_CONNECTIONS_PER_WORKER:
        raise PoolBudgetError(
            f"PostgreSQL's max_connections is {max_connections} ({reserved} reserved for "
            f"superusers, {other_clients_headroom(max_connections)} left to other clients): "
            f"{budget} for tidegate, {share} for each of {workers} workers, and a worker "
            f"needs at least {MIN_CONNECTIONS_PER_WORKER}. Run fewer workers, raise "
            "max_connections, or set TIDEGATE_DB_POOL_SIZE (connections per worker) when a "
            "connection pooler stands in front of PostgreSQL."
        )
    return PoolPlan.of(min(share, DEFAULT_POOL_PLAN.per_worker))


async def pg_connection_limits(url: str) -> tuple[int, int]:
    """The server's ``max_connections`` and the connections reserved from it
    (``superuser_reserved_connections``, plus ``reserved_connections`` on 16+)."""
    import asyncpg  # type: ignore[import-untyped]

    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    connection = await asyncpg.connect(dsn, timeout=10)
    try:
        row = await connection.fetchrow(
            "SELECT current_setting('max_connections')::int, "
            "current_setting('superuser_reserved_connections')::int "
            "+ coalesce(current_setting('reserved_connections', true)::int, 0)"
        )
    finally:
        await connection.close()
    assert row is not None
    return int(row[0]), int(row[1])


async def pool_plan_for(url: str, *, workers: int, override: int | None) -> PoolPlan:
    """The plan of a worker: ``override`` (TIDEGATE_DB_POOL_SIZE) as it is, else derived
    from the server's limits (raises PoolBudgetError when they are too small)."""
    if override is not None:
        return PoolPlan.of(override)
    unreachable: tuple[type[BaseException], ...] = (OSError, TimeoutError, *pg_errors())
    try:
        max_connections, reserved = await pg_connection_limits(url)
    except unreachable as error:
        # The server answers 503 while its database is down and recovers when it is back,
        # so an unreachable database at start plans for PostgreSQL's defaults instead.
        _log.warning(
            "cannot read PostgreSQL's max_connections (%s); planning for its default of %d",
            error,
            PG_DEFAULT_MAX_CONNECTIONS,
        )
        max_connections, reserved = PG_DEFAULT_MAX_CONNECTIONS, PG_DEFAULT_RESERVED
    return plan_pools(max_connections=max_connections, reserved=reserved, workers=workers)


PG_DEFAULT_MAX_CONNECTIONS = 100
PG_DEFAULT_RESERVED = 3


def pg_errors() -> tuple[type[BaseException], ...]:
    import asyncpg

    return (asyncpg.PostgresError, asyncpg.InterfaceError)


def _parse_datetime(value: Any) -> Any:
    return datetime.fromisoformat(value) if isinstance(value, str) else value


def _parse_date(value: Any) -> Any:
    return date.fromisoformat(value) if isinstance(value, str) else value


def _sqlite_value(value: Any) -> Any:
    """A bound value as SQLite stores its column: a calendar day as its ISO text, as
    SQLAlchemy's Date writes it (the stdlib's own date adapter is deprecated)."""
    return value.isoformat() if type(value) is date else value


# Nineteen ASCII digits in a row: maybe an integer beyond 64 bits, which orjson reads as
# a float; the ORM's reader (the stdlib's json) keeps it exact, and so does this one.
# Looked for in the UTF-8 bytes with every digit mapped to "0" and every other byte to a
# space (C loops: 0.55 us for a 200-character text, where the regex ``\d{19}`` took 2 us,
# four times orjson's parse of it). Only ASCII digits make a JSON number.
_DIGITS_ONLY = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))
_LONG_DIGITS = b"0" * 19


def decode_json(value: Any) -> Any:
    """JSON text as the stdlib's ``json.loads`` (the ORM's reader) reads it, by orjson
    where that gives the same: not for a text that may hold an integer beyond 64 bits,
    nor one orjson refuses (an escaped lone surrogate)."""
    if isinstance(value, bytes):
        value = value.decode()
    if not isinstance(value, str):
        return value
    if _LONG_DIGITS in value.encode("utf-8", "surrogatepass").translate(_DIGITS_ONLY):
        return json.loads(value)
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError:
        return json.loads(value)


# Shared decoding: a read whose documents are only encoded into its answer (never
# changed) may take the value an earlier read of the same text decoded: a stored
# alert's configuration is read far more often than written. Texts up to
# SHARED_JSON_MAX_CHARS, the SHARED_JSON_ENTRIES most recently read, per process.
SHARED_JSON_MAX_CHARS: Final = 4096
SHARED_JSON_ENTRIES: Final = 4096


@lru_cache(maxsize=SHARED_JSON_ENTRIES)
def _decode_shared(text: str) -> Any:
    return decode_json(text)


def decode_json_shared(value: Any) -> Any:
    """``decode_json``, the value shared with every other read of the same text: for a
    reader that never changes what it reads (``RawQuery(..., shared_json=True)``)."""
    if isinstance(value, str) and len(value) <= SHARED_JSON_MAX_CHARS:
        return _decode_shared(value)
    return decode_json(value)


def _to_bool(value: Any) -> Any:
    return bool(value) if isinstance(value, int) else value


def _value_reader(
    sql_type: TypeEngine[Any], *, shared_json: bool = False
) -> Callable[[Any], Any] | None:
    """What turns a raw driver's value of a column of ``sql_type`` into the value the
    ORM gives: SQLite's text datetimes and JSON, 0/1 booleans, PostgreSQL's JSON text;
    a TypeDecorator's own result processing after its impl's (UTCDateTime: aware UTC).
    None when the driver's value is already the ORM's."""
    decorator = sql_type if isinstance(sql_type, TypeDecorator) else None
    impl = decorator.impl_instance if decorator is not None else sql_type
    base: Callable[[Any], Any] | None = None
    if isinstance(impl, DateTime):
        base = _parse_datetime
    elif isinstance(impl, Date):
        base = _parse_date
    elif isinstance(impl, JSON):
        base = decode_json_shared if shared_json else decode_json
    elif isinstance(impl, Boolean):
        base = _to_bool
    if decorator is None:
        return base
    # A decorator that reads the raw driver's value itself, in one step (UTCDateTime).
    read_raw: Callable[[Any], Any] | None = getattr(decorator, "read_raw", None)
    if read_raw is not None:
        return read_raw
    process = decorator.process_result_value
    convert = base or (lambda value: value)

    def read(value: Any) -> Any:
        return None if value is None else process(convert(value), _RAW_DIALECT)

    return read


# UTCDateTime's result processing does not look at the dialect.
_RAW_DIALECT = sqlite_dialect.dialect()


class RawQuery:
    """A prebuilt Core SELECT with named bind parameters, compiled once for SQLite's
    stdlib driver (qmark placeholders in a known order). ``Database.fetch_records``
    answers its rows as records named by the selected columns, with the ORM's values.
    ``shared_json``: the JSON columns' values may be shared with other reads
    (``decode_json_shared``): for a query whose readers only encode them into an answer."""

    def __init__(self, statement: Select[*tuple[Any, ...]], *, shared_json: bool = False) -> None:
        self.statement = statement
        # An unnamed or clashing column is named by its position (``_3``).
        names = [str(column.key) for column in statement.selected_columns]
        self.record: Any = namedtuple("Record", names, rename=True)  # type: ignore[misc]
        self.readers: tuple[tuple[int, Callable[[Any], Any]], ...] = tuple(
            (index, reader)
            for index, column in enumerate(statement.selected_columns)
            if (reader := _value_reader(column.type, shared_json=shared_json)) is not None
        )

    # Compiled at first use, not at import: some sixty queries are built as their modules
    # load, and compiling them all for both dialects cost every process's start about
    # 0.2 s of CPU (a server serves few of them; a CLI command none).
    @cached_property
    def _sqlite(self) -> tuple[str, tuple[str, ...], dict[str, Any]]:
        compiled = self.statement.compile(
            dialect=sqlite_dialect.dialect(), compile_kwargs={"render_postcompile": True}
        )
        # Values fixed in the statement itself (a LIMIT, a literal compared against).
        fixed = {name: value for name, value in compiled.params.items() if value is not None}
        return str(compiled), tuple(compiled.positiontup or ()), fixed

    @cached_property
    def _pg(self) -> tuple[str, tuple[str, ...]]:
        pg_dialect = asyncpg_dialect.dialect()  # type: ignore[no-untyped-call]
        pg = self.statement.compile(dialect=pg_dialect, compile_kwargs={"render_postcompile": True})
        return str(pg), tuple(pg.positiontup or ())

    @property
    def sqlite_sql(self) -> str:
        return self._sqlite[0]

    @property
    def sqlite_order(self) -> tuple[str, ...]:
        return self._sqlite[1]

    @property
    def fixed(self) -> dict[str, Any]:
        return self._sqlite[2]

    @property
    def pg_sql(self) -> str:
        return self._pg[0]

    @property
    def pg_order(self) -> tuple[str, ...]:
        return self._pg[1]


def account_rows(model: Any, *names: str) -> RawQuery:
    """The columns ``names`` (none: every column) of ``model``'s rows of the account
    ``:account_id``, oldest first (``created_at``, then ``id``): the management lists'
    read. Naming only what the response is built from spares converting the rest."""
    table = model.__table__
    return RawQuery(
        select(*(table.c[name] for name in names) if names else table.columns)
        .where(model.account_id == bindparam("account_id"))
        .order_by(model.created_at, model.id)
    )


def account_row(model: Any, *names: str) -> RawQuery:
    """The columns ``names`` (none: every column) of ``model``'s row ``:id`` if it is
    the account ``:account_id``'s: a single item's read (no row: not found, or another
    account's)."""
    table = model.__table__
    return RawQuery(
        select(*(table.c[name] for name in names) if names else table.columns).where(
            model.id == bindparam("id"), model.account_id == bindparam("account_id")
        )
    )


def pg_connection_lost() -> tuple[type[BaseException], ...]:
    """What asyncpg raises on a connection the server has cut (a restart,
    pg_terminate_backend): closed, reset, or caught mid-protocol."""
    import asyncpg

    return (
        OSError,
        asyncpg.InterfaceError,
        asyncpg.InternalClientError,
        asyncpg.PostgresConnectionError,
        asyncpg.OperatorInterventionError,
    )


_FETCH_IN_USE = metrics.DB_CONNECTIONS_IN_USE.labels("fetch")


def _pool_capacity(engine: AsyncEngine) -> int:
    pool = engine.sync_engine.pool
    if isinstance(pool, QueuePool):
        return pool.size() + max(0, pool._max_overflow)
    return 0  # NullPool (SQLite's writes): a connection per use, no fixed capacity


def _watch_pool(engine: AsyncEngine, name: str) -> tuple[str, int]:
    """The pool's checkouts in ``tidegate_db_connections_in_use`` and its capacity in
    ``tidegate_db_pool_capacity`` (docs/metrics.md); ``name`` from a fixed set."""
    in_use = metrics.DB_CONNECTIONS_IN_USE.labels(name)
    capacity = _pool_capacity(engine)
    metrics.DB_POOL_CAPACITY.labels(name).inc(capacity)

    @event.listens_for(engine.sync_engine, "checkout")
    def _checkout(*_args: Any) -> None:
        in_use.inc()

    @event.listens_for(engine.sync_engine, "checkin")
    def _checkin(*_args: Any) -> None:
        in_use.dec()

    return name, capacity


@dataclass(slots=True)
class Database:
    """The engines and session factories of one process."""

    url: str
    read_engine: AsyncEngine
    write_engine: AsyncEngine
    read_sessions: async_sessionmaker[AsyncSession]
    write_sessions: async_sessionmaker[AsyncSession]
    # The file of an SQLite database, for the raw reader; None on PostgreSQL/in memory.
    sqlite_path: str | None = None
    sqlite_synchronous: str = "FULL"
    _reader: sqlite3.Connection | None = field(default=None, repr=False)
    statement_timeout_s: float = 30.0
    pool_timeout_s: float = 10.0
    pool_plan: PoolPlan = DEFAULT_POOL_PLAN
    read_budget: ReadBudget = field(default_factory=ReadBudget)
    # The log store's segment directory (docs/log-store.md, "Segments"); None: reads
    # leave segments out (tools that only write or manage).
    segment_dir: Path | None = None
    # With a segment bucket: this host's copies of its segments (reads), and the bucket
    # itself (the compactor, retention), docs/log-store.md "Segments in object storage".
    segment_cache: SegmentCache | None = None
    segment_objects: SegmentObjects | None = None
    _pg_pool: Any = field(default=None, repr=False)
    _pg_lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)
    # What _watch_pool added to tidegate_db_pool_capacity, taken back by dispose.
    _pool_capacities: tuple[tuple[str, int], ...] = field(default=(), repr=False)

    @classmethod
    def connect(
        cls,
        url: str,
        *,
        sqlite_synchronous: str = "FULL",
        statement_timeout_s: float = 30.0,
        pool_timeout_s: float = 10.0,
        pool_plan: PoolPlan = DEFAULT_POOL_PLAN,
        read_budget: ReadBudget | None = None,
    ) -> Database:
        """``pool_plan``: PostgreSQL's connections of this process (``pool_plan_for``)."""
        ensure_sqlite_dir(url)
        sqlite_path: str | None = None
        if url.startswith("sqlite"):
            read = _sqlite_read_engine(url)
            write = _sqlite_write_engine(url, sqlite_synchronous)
            database = make_url(url).database
            if database not in (None, "", ":memory:"):
                sqlite_path = database
        else:
            read = write = create_async_engine(
                url,
                pool_size=pool_plan.pool_size,
                max_overflow=pool_plan.max_overflow,
                pool_pre_ping=True,
                pool_timeout=pool_timeout_s,
                connect_args={
                    # Server side: no statement runs longer than this. Client side, a
                    # little later: a server that stopped answering is given up on.
                    "server_settings": {"statement_timeout": str(int(statement_timeout_s * 1000))},
                    "command_timeout": statement_timeout_s + 5,
                    "timeout": pool_timeout_s,
                },
            )
        watched = (
            (_watch_pool(read, "main"),)
            if read is write
            else (_watch_pool(read, "read"), _watch_pool(write, "write"))
        )
        return cls(
            url=url,
            read_engine=read,
            write_engine=write,
            read_sessions=async_sessionmaker(read, expire_on_commit=False, autoflush=False),
            write_sessions=async_sessionmaker(write, expire_on_commit=False, autoflush=False),
            sqlite_path=sqlite_path,
            sqlite_synchronous=sqlite_synchronous,
            statement_timeout_s=statement_timeout_s,
            pool_timeout_s=pool_timeout_s,
            pool_plan=pool_plan,
            read_budget=read_budget or ReadBudget(),
            _pool_capacities=watched,
        )

    async def fetch(self, query: RawQuery, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        """All rows of a hot read, as plain tuples. On SQLite the values are the
        driver's (text datetimes and JSON, 0/1 booleans); on PostgreSQL the column
        types' (see enterprise.service for the normalising)."""
        if self.sqlite_path is not None:
            if self._reader is None:
                # Every cursor is drained at once (below): no read stays open.
                self._reader = open_reader(
                    self.sqlite_path, wait_s=READ_ON_LOOP_WAIT_S, any_thread=True
                )
            if query.fixed:
                params = {**query.fixed, **params}
            cursor = self._reader.execute(
                query.sqlite_sql, [_sqlite_value(params[name]) for name in query.sqlite_order]
            )
            try:
                return cursor.fetchall()
            finally:
                cursor.close()
        if not self.url.startswith("postgresql"):  # an in-memory SQLite database
            async with self.read_engine.connect() as connection:
                return [tuple(row) for row in await connection.execute(query.statement, params)]
        if query.fixed:
            params = {**query.fixed, **params}
        pool = self._pg_pool or await self._open_pg_pool()
        args = [params[name] for name in query.pg_order]
        try:
            return await self._pg_fetch(pool, query.pg_sql, args)
        except pg_connection_lost() as error:
            if isinstance(error, TimeoutError):  # the pool stayed full: no second wait
                raise
            # A pooled connection that died with a server restart: a read is
            # idempotent, so try once more on a fresh one before giving up (503).
            return await self._pg_fetch(pool, query.pg_sql, args)

    async def fetch_records(self, query: RawQuery, params: dict[str, Any]) -> list[Any]:
        """``fetch``'s rows as records (named tuples) whose attributes are the query's
        columns, each value the one the ORM would give: a record reads like the ORM
        object to the code that builds a response from it, without a session, an
        identity map or instrumented attributes (docs/decisions.md, "The request path")."""
        rows = await self.fetch(query, params)
        readers = query.readers
        if self.sqlite_path is None and not self.url.startswith("postgresql"):
            readers = ()  # in memory: SQLAlchemy's engine already processed them
        make = query.record._make
        if not readers:
            return [make(row) for row in rows]
        found = []
        for row in rows:
            values = list(row)
            for index, reader in readers:
                if values[index] is not None:
                    values[index] = reader(values[index])
            found.append(make(values))
        return found

    async def _pg_fetch(self, pool: Any, sql: str, args: list[Any]) -> list[tuple[Any, ...]]:
        async with pool.acquire(timeout=self.pool_timeout_s) as connection:
            _FETCH_IN_USE.inc()
            try:
                rows = await connection.fetch(sql, *args)
            except BaseException:
                # Never hand a connection in an unknown state back to the pool (its
                # release does no reset): the pool opens a fresh one in its place.
                connection.terminate()
                raise
            finally:
                _FETCH_IN_USE.dec()
        return [tuple(row) for row in rows]

    def _pg_options(self) -> dict[str, Any]:
        return {
            "dsn": make_url(self.url)
            .set(drivername="postgresql")
            .render_as_string(hide_password=False),
            "timeout": self.pool_timeout_s,
            "command_timeout": self.statement_timeout_s + 5,
            "server_settings": {"statement_timeout": str(int(self.statement_timeout_s * 1000))},
        }

    async def pg_connection(self) -> Any:
        """A new asyncpg connection with the same limits (the group writer's own)."""
        import asyncpg

        return await asyncpg.connect(**self._pg_options())

    async def _open_pg_pool(self) -> Any:
        import asyncpg

        async def no_reset(_connection: Any) -> None:
            return None

        async with self._pg_lock:
            if self._pg_pool is None:
                self._pg_pool = await asyncpg.create_pool(
                    min_size=1,
                    max_size=self.pool_plan.fetch_pool,
                    reset=no_reset,
                    **self._pg_options(),
                )
                metrics.DB_POOL_CAPACITY.labels("fetch").inc(self.pool_plan.fetch_pool)
        return self._pg_pool

    async def dispose(self) -> None:
        if self.segment_objects is not None:
            objects, self.segment_objects = self.segment_objects, None
            await objects.close()
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        if self._pg_pool is not None:
            pool, self._pg_pool = self._pg_pool, None
            metrics.DB_POOL_CAPACITY.labels("fetch").dec(self.pool_plan.fetch_pool)
            try:
                await asyncio.wait_for(pool.close(), timeout=5)
            except TimeoutError:
                pool.terminate()
        await self.read_engine.dispose()
        if self.write_engine is not self.read_engine:
            await self.write_engine.dispose()
        capacities, self._pool_capacities = self._pool_capacities, ()
        for name, capacity in capacities:
            metrics.DB_POOL_CAPACITY.labels(name).dec(capacity)

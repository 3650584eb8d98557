"""The log store: lines in the same database as everything else, with per-account,
per-day usage. Every writer of lines (ingestion, the pipeline's log_analysis
destination) goes through ``store_lines`` so usage can never drift from what is stored.
Runs inside the caller's transaction: the request's session commits before it answers.

A stored line is one row of ``log_lines`` plus its *search text* (``search_text``: the
line and its meta JSON, case-folded), which the search index holds: an FTS5 trigram
table on SQLite, a trigram-indexed column on PostgreSQL (docs/log-store.md). Rows are
built once (``line_rows``, plain CPU, fit for a worker thread) and written with the
driver directly: ``executemany`` on SQLite, ``COPY`` on PostgreSQL. The ORM's insert
path and its per-row JSON encoding cost more than the database itself.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

import orjson
from sqlalchemy import text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from tidegate.models import AccountUsage


@dataclass(slots=True)
class NewLine:
    line: str
    ts: int
    host: str
    app: str | None = None
    level: str | None = None
    env: str | None = None
    file: str | None = None
    ip: str | None = None
    mac: str | None = None
    tags: list[str] | None = None
    meta: dict[str, Any] | None = None
    size_bytes: int = field(default=-1)
    # True when the writer had to repair the line to store it (a timestamp replaced by
    # the default time, a non-text line or field coerced, a field truncated or dropped):
    # counted per day as ``lines_fallback`` in usage.
    repaired: bool = False

    def __post_init__(self) -> None:
        if self.size_bytes < 0:
            self.size_bytes = len(self.line.encode("utf-8", "surrogatepass"))


USAGE_COUNTERS = (
    "lines_stored",
    "bytes_stored",
    "lines_excluded",
    "bytes_excluded",
    "lines_fallback",
)

DAY_MS = 86_400_000
# Between the line's text and its meta in the search text: a character no query
# literal of a line term can span usefully (record separator).
SEARCH_SEPARATOR = "\x1e"

# The columns a writer fills, in the order of the tuples ``line_rows`` builds. ``id``
# comes from the database (PostgreSQL's sequence) or the writer (SQLite, below).
COLUMNS = (
    "account_id",
    "ts",
    "received_ms",
    "host",
    "app",
    "level",
    "env",
    "file",
    "ip",
    "mac",
    "tags",
    "meta",
    "line",
    "size_bytes",
    "host_folded",
    "app_folded",
    "level_folded",
    "search",
)
_SEARCH = COLUMNS.index("search")


def utc_day(epoch_ms: int) -> date:
    return datetime.fromtimestamp(epoch_ms / 1000, UTC).date()


def search_text(line: str, meta_json: str | None) -> str:
    """What the search index holds for a line: its text and its meta's JSON text, both
    case-folded as the query matcher folds them, so a folded literal the line (or a meta
    value) contains is a substring of this text. ``meta_json`` is the exact text stored."""
    folded = line.casefold()
    return folded + SEARCH_SEPARATOR + meta_json.casefold() if meta_json else folded


def document_json(value: Any) -> str | None:
    """``meta`` or ``tags`` as the JSON text the store writes (and searches: non-ASCII
    characters are kept as they are, not escaped). NUL characters (which PostgreSQL's
    jsonb refuses) and unpaired surrogates (which UTF-8 cannot carry) become U+FFFD, as
    they do in a line's text. A float too large to have a fraction (``1e+16``) is written
    as the integer it is, which is how PostgreSQL's jsonb gives it back: both backends
    then read the same value, and the search text holds the digits a query sees."""
    if value is None:
        return None
    try:
        encoded = orjson.dumps(value).decode()
    except (orjson.JSONEncodeError, TypeError):
        return json.dumps(_repaired(value), ensure_ascii=False, separators=(",", ":"))
    if "\\u0000" in encoded or "e+" in encoded:
        return json.dumps(_repaired(value), ensure_ascii=False, separators=(",", ":"))
    return encoded


def _repaired(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode().replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {_repaired(str(key)): _repaired(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_repaired(item) for item in value]
    if isinstance(value, float):
        if not math.isfinite(value):  # not JSON
            return None
        if abs(value) >= 1e16:
            return int(value)
    return value


def _folded(value: str | None) -> str | None:
    return None if value is None else value.casefold()


def line_rows(account_id: str, received_ms: int, lines: Sequence[NewLine]) -> list[tuple[Any, ...]]:
    """The rows of ``lines`` in ``COLUMNS`` order: plain CPU, no database."""
    rows = []
    for item in lines:
        meta = document_json(item.meta)
        rows.append(
            (
                account_id,
                item.ts,
                received_ms,
                item.host,
                item.app,
                item.level,
                item.env,
                item.file,
                item.ip,
                item.mac,
                document_json(item.tags),
                meta,
                item.line,
                item.size_bytes,
                item.host.casefold(),
                _folded(item.app),
                _folded(item.level),
                search_text(item.line, meta),
            )
        )
    return rows


async def insert_rows(connection: AsyncConnection, rows: Sequence[tuple[Any, ...]]) -> None:
    """Write ``rows`` (from ``line_rows``) and their search text inside the connection's
    transaction, with the driver itself."""
    if not rows:
        return
    raw: Any = (await connection.get_raw_connection()).driver_connection  # asyncpg, aiosqlite
    if connection.dialect.name == "postgresql":
        if not raw.is_in_transaction():
            # SQLAlchemy's asyncpg adapter sends BEGIN with its first statement; COPY on
            # the driver before that would commit on its own.
            await connection.execute(text("SELECT 1"))
        await _ensure_partitions(connection, {row[2] // DAY_MS for row in rows})
        await raw.copy_records_to_table("log_lines", records=rows, columns=COLUMNS)
        return
    # SQLite: the writer numbers the lines, from a counter that only grows (the
    # transaction holds the write lock): an id is never used twice, so the FTS index
    # can never attribute a deleted line's words to a new one.
    count = len(rows)
    cursor = await raw.execute(_SQLITE_TAKE_IDS, (count,))
    (end,) = await cursor.fetchone()
    first = end - count + 1
    await raw.executemany(
        _SQLITE_INSERT_LINE, [(first + offset, *row[:_SEARCH]) for offset, row in enumerate(rows)]
    )
    await raw.executemany(
        _SQLITE_INSERT_SEARCH, [(first + offset, row[_SEARCH]) for offset, row in enumerate(rows)]
    )


# Past the largest id in the table too, in case anything inserted lines without the
# counter (an id there is one lookup of the primary key).
_SQLITE_TAKE_IDS = (
    "UPDATE log_store_state SET next_line_id = "
    "max(next_line_id, (SELECT coalesce(max(id), 0) FROM log_lines)) + ? "
    "WHERE id = 1 RETURNING next_line_id"
)
_SQLITE_INSERT_LINE = "INSERT INTO log_lines (id, {}) VALUES (?, {})".format(
    ", ".join(COLUMNS[:_SEARCH]), ", ".join("?" * _SEARCH)
)
_SQLITE_INSERT_SEARCH = "INSERT INTO log_search (rowid, text) VALUES (?, ?)"


def partition_name(day: int) -> str:
    """The PostgreSQL partition of ``log_lines`` holding lines received on ``day``
    (days since the epoch, UTC)."""
    return "log_lines_d" + datetime.fromtimestamp(day * 86_400, UTC).strftime("%Y%m%d")


# Partitions known to exist, per process and database: creating one is a catalog
# change, checked once.
_known_partitions: set[tuple[str, int]] = set()


async def _ensure_partitions(connection: AsyncConnection, days: set[int]) -> None:
    database = connection.engine.url.render_as_string()
    missing = {day for day in days if (database, day) not in _known_partitions}
    if not missing:
        return
    # The next day too, so the first write after midnight rarely changes the catalog.
    wanted = missing | {day + 1 for day in missing}
    async with connection.engine.begin() as own:
        for day in sorted(wanted):
            await ensure_partition(own, day)
    _known_partitions.update((database, day) for day in wanted)


async def ensure_partition(connection: AsyncConnection, day: int) -> None:
    """Create the partition of ``day`` (days since the epoch, UTC) if it does not exist.

    Created apart and then attached: ``ATTACH PARTITION`` takes a lock on the parent
    that neither readers nor writers conflict with, where ``CREATE TABLE ... PARTITION
    OF`` would wait for every running query on ``log_lines`` (a long export) and hold
    up everyone queued behind it. Several workers may race: a transaction-scoped
    advisory lock makes the check and the creation one step."""
    name = partition_name(day)
    await connection.execute(text("SELECT pg_advisory_xact_lock(7235402)"))
    attached = await connection.scalar(
        text(
            "SELECT 1 FROM pg_inherits WHERE inhparent = 'log_lines'::regclass "
            "AND inhrelid = to_regclass(:name)"
        ),
        {"name": name},
    )
    if attached is None:
        await connection.execute(
            text(f'CREATE TABLE IF NOT EXISTS "{name}" (LIKE log_lines INCLUDING DEFAULTS)')
        )
        await connection.execute(
            text(
                f'ALTER TABLE log_lines ATTACH PARTITION "{name}" '
                f"FOR VALUES FROM ({day * DAY_MS}) TO ({(day + 1) * DAY_MS})"
            )
        )


async def store_lines(
    *,
    session: AsyncSession,
    account_id: str,
    lines: Sequence[NewLine],
    received_ms: int,
    excluded_lines: int = 0,
    excluded_bytes: int = 0,
    excluded_repaired: int = 0,
) -> int:
    """Insert ``lines`` and count them (and the excluded ones) in today's usage.
    ``lines_fallback`` counts the repaired lines among ``lines`` plus
    ``excluded_repaired`` (repaired lines that exclusion rules kept out)."""
    await insert_rows(await session.connection(), line_rows(account_id, received_ms, lines))
    if lines or excluded_lines:
        await add_usage(
            session=session,
            account_id=account_id,
            day=utc_day(received_ms),
            lines_stored=len(lines),
            bytes_stored=sum(item.size_bytes for item in lines),
            lines_excluded=excluded_lines,
            bytes_excluded=excluded_bytes,
            lines_fallback=sum(1 for item in lines if item.repaired) + excluded_repaired,
        )
    return len(lines)


async def add_usage(
    *,
    session: AsyncSession,
    account_id: str,
    day: date,
    lines_stored: int = 0,
    bytes_stored: int = 0,
    lines_excluded: int = 0,
    bytes_excluded: int = 0,
    lines_fallback: int = 0,
) -> None:
    values = {
        "account_id": account_id,
        "day": day,
        "lines_stored": lines_stored,
        "bytes_stored": bytes_stored,
        "lines_excluded": lines_excluded,
        "bytes_excluded": bytes_excluded,
        "lines_fallback": lines_fallback,
    }
    dialect = session.bind.dialect.name if session.bind is not None else "sqlite"
    upsert = (postgresql.insert if dialect == "postgresql" else sqlite.insert)(AccountUsage).values(
        values
    )
    increments = {
        name: getattr(AccountUsage, name) + upsert.excluded[name] for name in USAGE_COUNTERS
    }
    await session.execute(
        upsert.on_conflict_do_update(index_elements=["account_id", "day"], set_=increments)
    )

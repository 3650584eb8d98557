"""The log store: lines in the same database as everything else, with per-account,
per-day usage. Every writer of lines (ingestion, the pipeline's log_analysis
destination) writes ``StoreBatch``es through ``sqlite_write`` / ``pg_write`` (the
worker's group writer, ``tidegate.logs.writer``, or ``store_lines`` inside a caller's
transaction), so usage can never drift from what is stored.

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
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

import orjson
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession

from tidegate.clock import epoch_ms_of
from tidegate.search.compiler import PREFIXED_FIELDS


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
    # Meta the sender did not want indexed (``indexMeta: false``): stored and shown with
    # the line, never part of its search text or of what queries and rules match.
    meta_unindexed: dict[str, Any] | None = None
    size_bytes: int = field(default=-1)
    # True when the writer had to repair the line to store it (a timestamp replaced by
    # the default time, a non-text line or field coerced, a field truncated or dropped):
    # counted per day as ``lines_fallback`` in usage.
    repaired: bool = False

    def __post_init__(self) -> None:
        if self.size_bytes < 0:
            line = self.line
            # str.isascii() reads a flag: an ASCII line's size is its length.
            self.size_bytes = (
                len(line) if line.isascii() else len(line.encode("utf-8", "surrogatepass"))
            )


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
    "meta_unindexed",
    "search",
)
_SEARCH = COLUMNS.index("search")


def utc_day(epoch_ms: int) -> date:
    return datetime.fromtimestamp(epoch_ms / 1000, UTC).date()


def search_text(line: str, meta_json: str | None) -> str:
    """What the search index holds for a line: its text and its meta's JSON text, both
    case-folded as the query matcher folds them, so a folded literal the line (or a meta
    value) contains is a substring of this text. ``meta_json`` is the exact text stored.

    The meta is left out when the line's text holds it already (``meta_in_line``: a
    JSON line whose fields are its meta, the usual parsed line): every literal a query
    looks for in the meta is then in the text. A pure function of the line and the
    stored meta text (SQLite's index is contentless: a delete recomputes the entry);
    ``SEARCH_TEXT_VERSION`` names this rule (a store indexed under another is rebuilt,
    ``logs.search_index``)."""
    folded = line.casefold()
    if not meta_json or meta_in_line(line, meta_json):
        return folded
    return folded + SEARCH_SEPARATOR + meta_json.casefold()


# The rule of ``search_text``: 1, the line and its meta JSON; 2, the meta left out when
# the line holds it (``meta_in_line``).
SEARCH_TEXT_VERSION = 2
# A reserved top-level name as a parsed line's meta spells it (``status`` as ``_status``,
# ``_source`` as ``__source``: logs.parsing). Only ``status`` is not itself ``_``-led.
_PREFIXED_KEY = '"_status":'
_UNDERSCORED_KEYS = re.compile(
    '"_(' + "|".join(sorted(re.escape(name) for name in PREFIXED_FIELDS if name[0] == "_")) + ')":'
)


def meta_in_line(line: str, meta_json: str) -> bool:
    """Whether ``line`` holds the meta JSON text ``meta_json`` (case-sensitive, which
    implies it case-folded: ``str.casefold`` maps each character alone), once the ``_``
    of every reserved name's key (``"_status":``, ``"__source":``) is taken out, as the
    line's own JSON wrote them (``"status":``). Every literal the SQL translation looks
    for in the meta is then in the line's text: a key is looked for as ``name"``, so
    ``_status:`` as ``status"`` (``logs.sql_filter``), and a value, a message or a key
    never spans a taken-out ``_`` (it sits in a key, right after its opening quote).

    The usual parsed JSON line ends with its meta JSON (with the ``_`` taken out): that
    is tested first by ``str.endswith`` (a compare of the tail) before the substring
    searches (each of which prepares its long needle first, as long as the compare), and
    a line without the meta's first character (``{``: most lines of other forms) holds
    none of it. The answer is the same either way (a tail is a substring)."""
    if line.endswith(meta_json):
        return True
    if meta_json[:1] not in line:
        return False
    if '"_' not in meta_json:
        return meta_json in line
    unprefixed = meta_json.replace(_PREFIXED_KEY, '"status":')
    if '"__' in unprefixed:
        unprefixed = _UNDERSCORED_KEYS.sub(r'"\1":', unprefixed)
    if unprefixed != meta_json and line.endswith(unprefixed):
        return True
    return meta_json in line or (unprefixed != meta_json and unprefixed in line)


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
    # A request's lines share one tags list: its JSON is written once.
    tags: Any = None
    tags_json: str | None = None
    for item in lines:
        if item.tags is not tags:
            tags, tags_json = item.tags, document_json(item.tags)
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
                tags_json,
                meta,
                item.line,
                item.size_bytes,
                item.host.casefold(),
                _folded(item.app),
                _folded(item.level),
                document_json(item.meta_unindexed),
                search_text(item.line, meta),
            )
        )
    return rows


@dataclass(slots=True)
class StoreBatch:
    """One account's lines of a write, as rows (``line_rows``), and the usage they add.
    Built off the event loop: the rows are most of a write's CPU outside the database."""

    account_id: str
    received_ms: int
    rows: list[tuple[Any, ...]]
    lines_stored: int
    bytes_stored: int
    lines_excluded: int = 0
    bytes_excluded: int = 0
    lines_fallback: int = 0
    # Whether the write must learn its rows' ids (live tail may be listening: its lines
    # then carry their ids, so a live line's context can be asked). SQLite's writer
    # numbers the lines itself and always knows them; on PostgreSQL they are taken from
    # the sequence first, only when asked.
    want_ids: bool = False
    # The rows' ids, in order, once written (None when the writer did not learn them).
    ids: Sequence[int] | None = None

    @classmethod
    def of(
        cls,
        *,
        account_id: str,
        received_ms: int,
        lines: Sequence[NewLine],
        excluded_lines: int = 0,
        excluded_bytes: int = 0,
        excluded_repaired: int = 0,
    ) -> StoreBatch:
        """``lines_fallback`` counts the repaired lines among ``lines`` plus
        ``excluded_repaired`` (repaired lines that exclusion rules kept out)."""
        return cls(
            account_id=account_id,
            received_ms=received_ms,
            rows=line_rows(account_id, received_ms, lines),
            lines_stored=len(lines),
            bytes_stored=sum(item.size_bytes for item in lines),
            lines_excluded=excluded_lines,
            bytes_excluded=excluded_bytes,
            lines_fallback=sum(1 for item in lines if item.repaired) + excluded_repaired,
        )


def usage_rows(batches: Sequence[StoreBatch]) -> list[tuple[Any, ...]]:
    """The batches' usage summed per account and day: ``(account_id, day,
    *USAGE_COUNTERS)``, sorted, so that two transactions adding to the same days always
    take their rows in the same order (opposite orders deadlock on PostgreSQL)."""
    usage: dict[tuple[str, date], list[int]] = {}
    for batch in batches:
        if not batch.lines_stored and not batch.lines_excluded:
            continue
        counts = usage.setdefault((batch.account_id, utc_day(batch.received_ms)), [0] * 5)
        counts[0] += batch.lines_stored
        counts[1] += batch.bytes_stored
        counts[2] += batch.lines_excluded
        counts[3] += batch.bytes_excluded
        counts[4] += batch.lines_fallback
    return [(account_id, day, *counts) for (account_id, day), counts in sorted(usage.items())]


def _usage_upsert(placeholders: Sequence[str]) -> str:
    names = ("account_id", "day", *USAGE_COUNTERS)
    increments = ", ".join(
        f"{name} = account_usage.{name} + excluded.{name}" for name in USAGE_COUNTERS
    )
    return (
        f"INSERT INTO account_usage ({', '.join(names)}) VALUES ({', '.join(placeholders)}) "
        f"ON CONFLICT (account_id, day) DO UPDATE SET {increments}"
    )


_USAGE_COLUMNS = 2 + len(USAGE_COUNTERS)
_SQLITE_ADD_USAGE = _usage_upsert(["?"] * _USAGE_COLUMNS)
_PG_ADD_USAGE = _usage_upsert([f"${n}" for n in range(1, _USAGE_COLUMNS + 1)])
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
# One row (an array), not one per id: a tenth of the client's CPU of reading rows.
_PG_TAKE_IDS = "SELECT array_agg(nextval('log_lines_id_seq')) FROM generate_series(1, $1)"
# Rows per COPY: the driver encodes a COPY's rows on the event loop.
_COPY_CHUNK = 2_000


def sqlite_write(connection: Any, batches: Sequence[StoreBatch]) -> None:
    """Write the batches' rows, their search text and their usage inside the
    connection's transaction (a DB-API connection on SQLite: the stdlib driver's own in
    the group writer's thread, or SQLAlchemy's adapted one through ``run_sync``)."""
    rows = [row for batch in batches for row in batch.rows]
    cursor = connection.cursor()
    try:
        if rows:
            # The writer numbers the lines, from a counter that only grows (the
            # transaction holds the write lock): an id is never used twice, so the FTS
            # index can never attribute a deleted line's words to a new one.
            count = len(rows)
            cursor.execute(_SQLITE_TAKE_IDS, (count,))
            (end,) = cursor.fetchone()
            first = end - count + 1
            cursor.executemany(
                _SQLITE_INSERT_LINE,
                [(first + offset, *row[:_SEARCH]) for offset, row in enumerate(rows)],
            )
            cursor.executemany(
                _SQLITE_INSERT_SEARCH,
                [(first + offset, row[_SEARCH]) for offset, row in enumerate(rows)],
            )
            for batch in batches:
                batch.ids = range(first, first + len(batch.rows))
                first += len(batch.rows)
        usage = [(row[0], row[1].isoformat(), *row[2:]) for row in usage_rows(batches)]
        if usage:
            cursor.executemany(_SQLITE_ADD_USAGE, usage)
    finally:
        cursor.close()


async def pg_write(connection: Any, batches: Sequence[StoreBatch]) -> None:
    """Write the batches' rows (COPY into the partitioned table) and their usage inside
    the asyncpg connection's transaction; their days' partitions must exist
    (``ensure_partitions``)."""
    for batch in batches:
        if batch.want_ids and batch.rows:
            await _pg_copy_with_ids(connection, batch)
            continue
        for start in range(0, len(batch.rows), _COPY_CHUNK):
            await connection.copy_records_to_table(
                "log_lines", records=batch.rows[start : start + _COPY_CHUNK], columns=COLUMNS
            )
    usage = usage_rows(batches)
    if usage:
        await connection.executemany(_PG_ADD_USAGE, usage)


async def _pg_copy_with_ids(connection: Any, batch: StoreBatch) -> None:
    """The batch's rows with ids taken from the table's sequence first (one round trip:
    the ids the column's default would have given them), so the writer knows them."""
    ids: list[int] = await connection.fetchval(_PG_TAKE_IDS, len(batch.rows))
    for start in range(0, len(batch.rows), _COPY_CHUNK):
        chunk = batch.rows[start : start + _COPY_CHUNK]
        await connection.copy_records_to_table(
            "log_lines",
            records=[(ids[start + at], *row) for at, row in enumerate(chunk)],
            columns=("id", *COLUMNS),
        )
    batch.ids = ids


def batch_days(batches: Sequence[StoreBatch]) -> set[int]:
    """The days (since the epoch) whose partitions the batches' rows go to."""
    return {batch.received_ms // DAY_MS for batch in batches if batch.rows}


def rows_by_day(batches: Sequence[StoreBatch]) -> dict[int, int]:
    """The batches' rows by the day (since the epoch) of the partition they go to."""
    rows: dict[int, int] = {}
    for batch in batches:
        if batch.rows:
            day = batch.received_ms // DAY_MS
            rows[day] = rows.get(day, 0) + len(batch.rows)
    return rows


async def write_batches(connection: AsyncConnection, batches: Sequence[StoreBatch]) -> None:
    """``sqlite_write`` or ``pg_write`` inside the transaction of a SQLAlchemy connection."""
    if connection.dialect.name == "postgresql":
        raw: Any = (await connection.get_raw_connection()).driver_connection
        if not raw.is_in_transaction():
            # SQLAlchemy's asyncpg adapter sends BEGIN with its first statement; COPY on
            # the driver before that would commit on its own.
            await connection.execute(text("SELECT 1"))
        await ensure_partitions(connection.engine, batch_days(batches))
        await pg_write(raw, batches)
        return
    await connection.run_sync(lambda sync: sqlite_write(sync.connection.dbapi_connection, batches))


_PARTITION_PREFIX = "log_lines_d"


def partition_name(day: int) -> str:
    """The PostgreSQL partition of ``log_lines`` holding lines received on ``day``
    (days since the epoch, UTC)."""
    stamp = datetime.fromtimestamp(day * DAY_MS / 1000, UTC)
    return _PARTITION_PREFIX + stamp.strftime("%Y%m%d")


def partition_day(name: str) -> int | None:
    """The day of a partition named by ``partition_name``; None for any other name."""
    digits = name.removeprefix(_PARTITION_PREFIX)
    if name == digits or len(digits) != 8 or not (digits.isascii() and digits.isdigit()):
        return None
    stamp = datetime.strptime(digits, "%Y%m%d").replace(tzinfo=UTC)
    return epoch_ms_of(stamp) // DAY_MS


# Partitions known to exist, per process and database: creating one is a catalog
# change, checked once.
_known_partitions: set[tuple[str, int]] = set()


async def ensure_partitions(engine: AsyncEngine, days: set[int]) -> None:
    """Create the partitions of ``days`` (and of the day after each) that this process
    has not seen yet, in a transaction of their own."""
    database = engine.url.render_as_string()
    missing = {day for day in days if (database, day) not in _known_partitions}
    if not missing:
        return
    # The next day too, so the first write after midnight rarely changes the catalog.
    wanted = missing | {day + 1 for day in missing}
    async with engine.begin() as own:
        for day in sorted(wanted):
            await ensure_partition(own, day)
    _known_partitions.update((database, day) for day in wanted)


def forget_partition(engine: AsyncEngine, day: int) -> None:
    """Retention dropped the partition of ``day``: this process creates it again if it
    ever writes to that day. (Other processes only know the days they wrote to, which
    are today's and tomorrow's: retention never drops those.)"""
    _known_partitions.discard((engine.url.render_as_string(), day))


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
    """Insert ``lines`` and count them (and the excluded ones) in today's usage, inside
    the session's transaction (``StoreBatch.of`` says what is counted). Requests write
    through the worker's group writer (``tidegate.logs.writer``) instead, which commits
    the same rows with the same functions."""
    batch = StoreBatch.of(
        account_id=account_id,
        received_ms=received_ms,
        lines=lines,
        excluded_lines=excluded_lines,
        excluded_bytes=excluded_bytes,
        excluded_repaired=excluded_repaired,
    )
    await write_batches(await session.connection(), [batch])
    return len(lines)

"""The log store's columnar tier: immutable Parquet segments (docs/log-store.md,
"Segments").

A segment holds lines of one account received in one window (``segment_window_s`` of
``received_ms``), at most ``segment_max_lines`` of them, sorted by (ts, id), in the
columns of ``log_lines`` that reads use, named as there (so the search translation of
``tidegate.logs.sql_filter`` applies to a segment, in its ``duckdb`` dialect): the
case-folded line and meta JSON text (the search text's two parts), host, app, level and their folded copies, file, env, ip, mac, tags, meta
and unindexed meta (JSON text), the line, ts, received_ms and the id (the export's
ordering key with ts), and the line's size as usage counts it (``size_bytes``). The
compactor (``tidegate.logs.compactor``) writes them; reads (export pages, aggregations,
usage) open them with DuckDB, read-only, in the export threads.

Tenant isolation: a segment's file lives under a directory of its account's own
(``<account_id>/...``); a read lists the segments of its account in the registry
(``log_segments``) and opens only those files, each checked to lie in that directory.

Where the files are: the segment directory, or, with a segment bucket, the bucket, of
which each host keeps copies in a cache directory (``tidegate.logs.segment_cache``): a
read is given a ``fetch`` that makes a segment's copy present and returns its path.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement, Select, and_, select
from sqlalchemy.dialects import sqlite
from sqlalchemy.sql.elements import False_, True_

from tidegate import json_codec
from tidegate.logs.record import OPTIONAL_FIELDS
from tidegate.logs.store import COLUMNS as STORE_COLUMNS
from tidegate.logs.store import DAY_MS
from tidegate.models import Account, LogLine, LogSegment

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection

# The columns of a segment, in the order the compactor writes them. The search text is
# in its two parts, the case-folded line and the case-folded meta JSON text
# (``store.search_text``), so that a line's terms are looked for in its text only, and
# a phrase is exactly a substring of it. ``size_bytes`` (the line's size as usage counts
# it) is missing from segments written before it was added: ``SIZE_OF_LINE``.
NAMES = (
    "id",
    *STORE_COLUMNS[1:13],  # ts, received_ms, host ... line, as the store writes them
    "meta_unindexed",
    *STORE_COLUMNS[14:17],  # host_folded, app_folded, level_folded
    "line_folded",
    "meta_folded",
    "size_bytes",
)
# 64-bit integers; the other columns are text.
_INTEGERS = frozenset(("id", "ts", "received_ms", "size_bytes"))
# A row group per this many lines: DuckDB skips the groups whose (ts, id) statistics
# fall outside a page's range.
ROW_GROUP_LINES = 16_384
COMPRESSION = "zstd"
TEMP_SUFFIX = ".tmp"
# Account ids are 24 characters of [0-9a-z]; anything else would not name a directory.
_SAFE_ACCOUNT = re.compile(r"[A-Za-z0-9_-]{1,64}")

# The columns a read of lines returns, in ``logs.read_queries.LineRow`` order.
LINE_COLUMNS = ("id", "ts", *NAMES[3:13], "meta_unindexed")
# DuckDB threads per connection: the export threads (two per process) bound the reads,
# and each read uses one core, as a database read does.
DUCKDB_THREADS = 1
DUCKDB_MEMORY = "512MB"


_received = LogLine.__table__.c.received_ms


class SegmentError(Exception):
    """A segment could not be read (missing, or outside its account's directory)."""


class SegmentMissing(SegmentError):
    """The object store has no object for a registered segment: retention dropped it
    after the read listed it (the read starts over with a new listing)."""


class SegmentUnavailable(SegmentError):
    """The object store could not give a segment (unreachable, refusing) after retries."""


def account_directory(root: Path, account_id: str) -> Path:
    if _SAFE_ACCOUNT.fullmatch(account_id) is None:
        raise SegmentError(f"account id {account_id!r} cannot name a directory")
    return root / account_id


def segment_name(account_id: str, window_ms: int, min_id: int, token: str = "") -> str:
    """The file's path relative to the segment directory. ``token`` (a segment bucket's
    moves) makes the name one no other move ever writes: an object is then only ever
    removed by the move that wrote it, the orphan sweep or retention."""
    if _SAFE_ACCOUNT.fullmatch(account_id) is None:
        raise SegmentError(f"account id {account_id!r} cannot name a directory")
    return f"{account_id}/{window_ms}-{min_id}{'-' + token if token else ''}.parquet"


def write_segment(
    root: Path,
    name: str,
    columns: dict[str, list[Any]],
    *,
    row_group_lines: int = ROW_GROUP_LINES,
) -> int:
    """Writes the rows (``columns`` by ``NAMES``, already sorted by (ts, id)) as the
    segment ``name``, in row groups of ``row_group_lines``: to a temporary file,
    fsynced, renamed into place, the directory fsynced. Returns the file's size. Plain
    CPU and disk: call it off the event loop."""
    # Imported here: only the compactor writes (start-up imports stay small).
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + TEMP_SUFFIX)
    schema = pa.schema(
        [(column, pa.int64() if column in _INTEGERS else pa.string()) for column in NAMES]
    )
    table = pa.Table.from_pydict(columns, schema=schema)
    with open(temporary, "wb") as handle:
        pq.write_table(
            table,
            handle,
            compression=COMPRESSION,
            row_group_size=row_group_lines,
            use_dictionary=["host", "app", "level", "env", "file", "ip", "mac", "tags"],
            write_statistics=[
                "id",
                "ts",
                "received_ms",
                "host_folded",
                "app_folded",
                "level_folded",
            ],
        )
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    _fsync_directory(path.parent)
    return path.stat().st_size


def _fsync_directory(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def stored_files(root: Path) -> Iterator[tuple[str, Path]]:
    """Every file under the segment directory: (name relative to it, path). Only the
    accounts' directories are looked in (a cache's own, ``.partial``, are not)."""
    if not root.is_dir():
        return
    for directory in root.iterdir():
        if directory.is_dir() and _SAFE_ACCOUNT.fullmatch(directory.name):
            for path in directory.iterdir():
                yield f"{directory.name}/{path.name}", path


# -- the registry ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Segment:
    id: int
    path: str
    lines: int
    min_ts: int
    max_ts: int
    min_id: int
    max_id: int
    max_received_ms: int


def account_segments(*, account_id: str) -> Select[int, str, int, int, int, int, int, int]:
    """The registry rows of the account's segments, by id: two equal listings around a
    read mean no segment was added or dropped between (an id SQLite reuses after the
    newest segment was dropped comes with another path)."""
    return (
        select(
            LogSegment.id,
            LogSegment.path,
            LogSegment.lines,
            LogSegment.min_ts,
            LogSegment.max_ts,
            LogSegment.min_id,
            LogSegment.max_id,
            LogSegment.max_received_ms,
        )
        .where(LogSegment.account_id == account_id)
        .order_by(LogSegment.id)
    )


def account_retention(*, account_id: str) -> Select[Any]:
    """The account's retention in days (0: kept forever)."""
    return select(Account.retention).where(Account.id == account_id)


def retained_from(retention_days: int | None, now: int) -> int:
    """The received time from which an account's lines are within its retention."""
    if not retention_days or retention_days <= 0:
        return 0
    return now - retention_days * DAY_MS


@dataclass(frozen=True, slots=True)
class AccountSegments:
    """The segments of one account, as listed at the start of a read."""

    root: Path
    account_id: str
    segments: tuple[Segment, ...]
    # Lines received before this are past the account's retention: no read returns them
    # (a segment straddling the edge is filtered at read time; retention drops a segment
    # once every line of it is past).
    retained_from_ms: int = 0
    # With a segment bucket: gives a segment's file on this host (``root`` is then the
    # cache's directory), downloaded on first use; None: the file is under ``root``.
    fetch: Callable[[str], Path] | None = None

    @classmethod
    def of(
        cls,
        root: Path,
        account_id: str,
        rows: Sequence[Sequence[Any]],
        *,
        retained_from_ms: int = 0,
        fetch: Callable[[str], Path] | None = None,
    ) -> AccountSegments:
        segments = tuple(
            Segment(
                id=int(row[0]),
                path=str(row[1]),
                lines=int(row[2]),
                min_ts=int(row[3]),
                max_ts=int(row[4]),
                min_id=int(row[5]),
                max_id=int(row[6]),
                max_received_ms=int(row[7]),
            )
            for row in rows
            # Wholly past retention: its lines are returned by no read.
            if int(row[7]) >= retained_from_ms
        )
        return cls(
            root=root,
            account_id=account_id,
            segments=segments,
            retained_from_ms=retained_from_ms,
            fetch=fetch,
        )

    def retained(self, where: ColumnElement[bool] | None) -> ColumnElement[bool] | None:
        """``where`` and within the account's retention (by received time, as
        retention counts)."""
        if self.retained_from_ms <= 0:
            return where
        within = _received >= self.retained_from_ms
        return within if where is None else and_(where, within)

    @property
    def max_id(self) -> int | None:
        return max((segment.max_id for segment in self.segments), default=None)

    def files(self, *, from_ms: int, to_ms: int, max_id: int) -> list[str]:
        """The files that may hold lines of the range up to ``max_id``: each checked to
        be this account's."""
        return [file.path for file in self.spans(from_ms=from_ms, to_ms=to_ms, max_id=max_id)]

    def spans(self, *, from_ms: int, to_ms: int, max_id: int) -> list[SegmentFile]:
        """``files``, each with the time span of its lines; a file is fetched when its
        ``path`` is first asked for (a walk asks only for the files of its slices)."""
        return [
            SegmentFile(
                segment.path,
                segment.min_ts,
                segment.max_ts,
                segment.lines,
                locate=partial(self._path, segment),
            )
            for segment in self.segments
            if not (segment.max_ts < from_ms or segment.min_ts > to_ms or segment.min_id > max_id)
        ]

    def holding(self, line_id: int) -> list[str]:
        """The files whose id span holds ``line_id``."""
        return [
            self._path(segment)
            for segment in self.segments
            if segment.min_id <= line_id <= segment.max_id
        ]

    def _path(self, segment: Segment) -> str:
        """The segment's file, checked to lie in the account's directory."""
        directory = account_directory(self.root, self.account_id).resolve()
        path = (self.root / segment.path).resolve()
        if path.parent != directory:
            raise SegmentError(f"segment {segment.path!r} is not the account's")
        return str(path if self.fetch is None else self.fetch(segment.path))


@dataclass(frozen=True, slots=True)
class SegmentFile:
    """A segment a read may open. Narrowed by the segment index (``tiers.searched``):
    ``rows``, the file row numbers (first, last) of the row groups that may hold a match
    (None: every row), and the span and count of the lines in them."""

    name: str
    min_ts: int
    max_ts: int
    lines: int
    locate: Callable[[], str] = field(compare=False, repr=False)
    rows: tuple[tuple[int, int], ...] | None = None

    @property
    def path(self) -> str:
        """The file on this host (from a segment bucket: fetched on first use)."""
        return self.locate()


# -- reading with DuckDB -------------------------------------------------------------

_local = threading.local()
_SQLITE = sqlite.dialect()


def duckdb_connection() -> DuckDBPyConnection:
    """The calling thread's DuckDB connection (in memory, over the files it is given)."""
    connection: DuckDBPyConnection | None = getattr(_local, "connection", None)
    if connection is None:
        # Imported on a read's first segment: a store without segments never loads it.
        import duckdb

        connection = duckdb.connect(
            ":memory:",
            config={"threads": DUCKDB_THREADS, "memory_limit": DUCKDB_MEMORY},
        )
        _local.connection = connection
    return connection


@dataclass(frozen=True, slots=True)
class DuckCondition:
    """A condition of ``tidegate.logs.sql_filter`` as DuckDB SQL with ``?`` parameters."""

    sql: str
    parameters: tuple[Any, ...]
    nothing: bool = False  # the condition is false: no line can match


def duck_condition(where: ColumnElement[bool] | None) -> DuckCondition:
    """The translated filter (``sql_filter.translate(..., dialect="duckdb")``) as DuckDB
    SQL over a relation named ``log_lines``. SQLite's
    rendering (``?`` parameters, plain types, ``coalesce(x, 0) = 0`` for NOT) is
    DuckDB's SQL too."""
    if where is None or isinstance(where, True_):
        return DuckCondition("TRUE", ())
    if isinstance(where, False_):
        return DuckCondition("FALSE", (), nothing=True)
    compiled = where.compile(dialect=_SQLITE, compile_kwargs={"render_postcompile": True})
    bound = compiled.params
    return DuckCondition(f"({compiled})", tuple(bound[name] for name in compiled.positiontup or ()))


def missing_file(error: BaseException) -> bool:
    """Whether ``error`` is DuckDB failing to open a file, or a segment bucket without
    the object: a segment retention dropped after the read listed it (the read starts
    over with a new listing), or a cached copy another process removed meanwhile."""
    if isinstance(error, SegmentMissing):
        return True
    duckdb = sys.modules.get("duckdb")
    return duckdb is not None and isinstance(error, duckdb.IOException)


def _file_list(files: Sequence[str]) -> str:
    """The files as a DuckDB list of SQL strings."""
    return "[" + ", ".join("'" + path.replace("'", "''") + "'" for path in files) + "]"


# The file row numbers of the row groups of some files a read may need, by path.
RowRanges = Mapping[str, Sequence[tuple[int, int]]]
# A scan tests at most this many row ranges of its file: DuckDB evaluates their OR on
# every row it decodes, which over hundreds of ranges (an index of blocks finer than a
# row group) cost more than the LIKE it spared (docs/log-store.md, "A finer index:
# measured").
MAX_SCAN_RANGES = 64


def bounded_ranges(ranges: Sequence[tuple[int, int]], most: int) -> list[tuple[int, int]]:
    """The ranges (first, last; in order, apart) as at most ``most`` ranges covering
    them: the narrowest gaps between them are filled (more rows are read, none less)."""
    if len(ranges) <= most:
        return list(ranges)
    gaps = sorted(range(1, len(ranges)), key=lambda at: ranges[at][0] - ranges[at - 1][1])
    splits = sorted(gaps[len(gaps) - (most - 1) :]) if most > 1 else []
    bounded = []
    start = 0
    for split in [*splits, len(ranges)]:
        bounded.append((ranges[start][0], ranges[split - 1][1]))
        start = split
    return bounded


def relation(files: Sequence[str]) -> str:
    """The FROM clause over the whole files (paths are quoted as SQL strings)."""
    return f"read_parquet({_file_list(files)}) AS log_lines"


@dataclass(frozen=True, slots=True)
class Scan:
    """A DuckDB statement over some files (``scan``) and its positional parameters."""

    sql: str
    parameters: list[Any]


def scan(
    files: Sequence[str],
    rows: RowRanges | None,
    *,
    columns: str,
    where: str,
    parameters: Sequence[Any],
    top: tuple[str, int] | None = None,
) -> Scan:
    """``SELECT columns FROM <the files> WHERE where`` (``parameters``: those of
    ``where``), with ``top`` (order, limit): ``ORDER BY order LIMIT limit``. A file with
    ``rows`` (narrowed by the segment index) is read in those ranges of its row numbers
    only, in a scan of its own (its ranges are its own); each scan then carries the
    whole condition, the columns and the order and limit (its parameters repeated, in
    order, for each), and the statement orders and limits their union again: DuckDB
    filters each scan as it reads it (a condition outside the union it would apply only
    after reading every row of the kept row groups, which made a read keeping many of
    them slower than one without the index; docs/log-store.md, "The segment index")."""
    tail = "" if top is None else f" ORDER BY {top[0]} LIMIT ?"
    own = [*parameters, *(() if top is None else (top[1],))]
    narrowed = [path for path in files if rows and path in rows]
    if not narrowed:
        return Scan(f"SELECT {columns} FROM {relation(files)} WHERE {where}{tail}", own)
    assert rows is not None
    whole = [path for path in files if path not in rows]
    parts = [f"SELECT {columns} FROM {relation(whole)} WHERE {where}{tail}"] if whole else []
    for path in narrowed:
        within = " OR ".join(
            f"file_row_number BETWEEN {int(first)} AND {int(last)}"
            for first, last in bounded_ranges(rows[path], MAX_SCAN_RANGES)
        )
        parts.append(
            f"SELECT {columns} FROM read_parquet({_file_list([path])}, file_row_number = true) "
            f"AS log_lines WHERE ({within or 'FALSE'}) AND {where}{tail}"
        )
    # Each scan's columns are the same list: the union is by position.
    union = " UNION ALL ".join(f"({part})" for part in parts)
    if top is None:
        return Scan(union, own * len(parts))
    return Scan(f"SELECT * FROM ({union}){tail}", [*own * len(parts), top[1]])


def _optional(name: str, column: str) -> str:
    # ``||`` with NULL is NULL, which ``concat`` leaves out: the field is omitted.
    return f"'{name}' || to_json({column})"


# The tags as orjson spells a list of strings: PostgreSQL's segments keep jsonb's
# spelling of them (``["a", "b"]``); a ``", "`` is never inside a string, where a quote
# is escaped (and a backslash makes the record Python's: ``_RECORD_SURE``).
_TAGS = "replace(tags, '\", \"', '\",\"')"
# ``export.service.export_record``'s JSON text of a row, built by DuckDB: the fields in
# ``record.public_record``'s order, the optional ones left out when NULL, ``_id`` as a
# string, the tags and the meta as they are stored, the line last. DuckDB's ``to_json``
# of a string escapes as orjson does (``"``, ``\``; ``\b \t \n \f \r``; non-ASCII,
# DEL and U+2028 as they are) except the other control characters, which it writes
# ``\u000B`` where orjson writes ``\u000b``: a record holding ``\u00`` anywhere is left
# to Python (a line with a literal backslash and "u00" too, which only costs the slow
# path).
_RECORD_TEXT = (
    'concat(\'{"_id":"\', id, \'","_ts":\', ts, \',"_host":\', to_json(host), '
    + ", ".join(_optional(f',"{name}":', column) for name, column in OPTIONAL_FIELDS)
    + f", CASE WHEN tags <> '[]' THEN ',\"_tag\":' || {_TAGS} END"
    + ", ',\"_meta\":' || meta, ',\"_line\":', to_json(line), '}')"
)
# Where the text is surely ``export_record``'s: no unindexed meta to merge; tags absent,
# empty, or a list in orjson's spelling once ``_TAGS`` (the meta's rules below, and no
# ``, ``: a separator with a space before anything but a string); a meta absent or in the store's own spelling by
# ``json_codec.in_own_spelling``'s rules (its ``OTHER_SPELLING_REGEXP``, as an SQL string's text).
_SPELLED_OTHERWISE = json_codec.OTHER_SPELLING_REGEXP.replace("'", "''")
_RECORD_SURE = (
    "meta_unindexed IS NULL"
    " AND (tags IS NULL OR tags = '[]' OR (starts_with(tags, '[')"
    f" AND NOT regexp_matches({_TAGS}, ', |{_SPELLED_OTHERWISE}')))"
    " AND (meta IS NULL OR (starts_with(meta, '{')"
    f" AND NOT regexp_matches(meta, '{_SPELLED_OTHERWISE}')))"
    " AND NOT contains(record, '\\u00')"
)
# ``export.service._weight`` of a row: DuckDB's ``length`` counts code points, as len().
_RECORD_WEIGHT = (
    "length(line) + coalesce(length(meta), 0) + coalesce(length(meta_unindexed), 0)"
    " + coalesce(length(tags), 0) + {overhead}"
)


def with_records(statement: str, *, order: str, overhead: int) -> str:
    """``statement`` (a scan of ``LINE_COLUMNS`` ordered by ``order``) with each row's
    record rendered (``_RECORD_TEXT``) and its weight after the columns where DuckDB is
    sure of it (``_RECORD_SURE``), the columns before then NULL but ``id`` and ``ts``
    (Python reads and builds nothing more of that row); else the columns as they are and
    two NULLs. ``overhead``: ``_weight``'s share of the short fields."""
    sure = f"CASE WHEN {_RECORD_SURE} THEN record END"
    rest = ", ".join(f"CASE WHEN rendered IS NULL THEN {name} END" for name in LINE_COLUMNS[2:])
    weight = _RECORD_WEIGHT.format(overhead=int(overhead))
    return (
        f"SELECT id, ts, {rest}, rendered, CASE WHEN rendered IS NOT NULL THEN weight END "
        f"FROM (SELECT *, {sure} AS rendered FROM (SELECT *, {_RECORD_TEXT} AS record, "
        f"{weight} AS weight FROM ({statement}))) ORDER BY {order}"
    )


# A line's size in a segment written before ``size_bytes`` was: the UTF-8 length of
# its text (DuckDB's ``strlen`` counts bytes), which is what the store has always
# recorded as ``size_bytes`` (``store.NewLine``), so both give the same number for
# every line stored so far (docs/log-store.md, "Usage from segments").
SIZE_OF_LINE = "strlen(line)"


def having_column(files: Sequence[str]) -> str:
    """A DuckDB statement listing those of the files whose schema has the column named
    by its one parameter (their ``file_name`` as given): it reads the files' footers
    only."""
    return f"SELECT DISTINCT file_name FROM parquet_schema({_file_list(files)}) WHERE name = ?"

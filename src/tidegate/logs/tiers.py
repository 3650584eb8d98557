"""Reading both tiers of the log store as one (docs/log-store.md, "One query, two
tiers").

A read (an export page, an aggregation) lists the account's segments, reads the row
store with today's SQL and the segments with DuckDB, and merges. The compactor
registers a segment and deletes its lines from the row store in one transaction;
retention deletes a segment's registry row, then its file. A read that finds the same
listing of the account's segments (ids and paths) after it as before saw no move and no
drop happen while it read, and every line it could see was in exactly one tier.
Otherwise (a move or a drop committed in between, or a file gone under the read) the
read starts over (``consistent``), at most ``MAX_ATTEMPTS`` times. Lines past the
account's retention are left out of every read (by received time).

Both tiers share the (ts, id) order and the ids: an export cursor holds no tier, so a
page continues exactly where the previous one stopped whichever tier each line is in
now (paging stays exactly-once across the boundary and while lines move).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import closing, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, select

from tidegate.clock import now_ms
from tidegate.errors import ServiceUnavailable
from tidegate.logs import segment_index, segment_lookup
from tidegate.logs.read_queries import LineRow, as_line_row
from tidegate.logs.reading import PageReader, SegmentReader
from tidegate.logs.segments import (
    LINE_COLUMNS,
    SIZE_OF_LINE,
    AccountSegments,
    DuckCondition,
    RowRanges,
    SegmentFile,
    SegmentUnavailable,
    account_retention,
    account_segments,
    duck_condition,
    having_column,
    missing_file,
    retained_from,
    scan,
    with_records,
)
from tidegate.metrics import SEGMENT_FILES, SEGMENT_ROW_GROUPS
from tidegate.models import LogSegment

T = TypeVar("T")

# Reads that found a move committed meanwhile start over; a compactor moves one segment
# per transaction, seconds apart, so a second attempt is the most one usually needs.
MAX_ATTEMPTS = 6
RETRY_S = 0.02
# The most rows one DuckDB statement of a walk asks for (then the next continues).
MAX_CHUNK = 20_000
# Segment indexes read from the registry per statement (about 0.5 MB each for 100,000
# lines of the search bench's data; at most 1.8 MB).
INDEX_FETCH = 8


def consistent(reader: PageReader, account_id: str, read: Callable[[AccountSegments], T]) -> T:
    """``read(segments)`` over a view in which no line moved between the tiers and no
    segment was dropped, leaving out the lines past the account's retention."""
    root = reader.segment_dir
    if root is None:
        return read(AccountSegments(root=_NOWHERE, account_id=account_id, segments=()))
    cache = reader.segment_cache
    retained_from_ms: int | None = None
    for attempt in range(MAX_ATTEMPTS):
        rows = reader.all(account_segments(account_id=account_id))
        if rows and retained_from_ms is None:
            # Only an account with segments pays for this lookup.
            retention = reader.scalar(account_retention(account_id=account_id))
            retained_from_ms = retained_from(retention, now_ms())
        with cache.reading() if cache is not None else nullcontext(None) as fetch:
            segments = AccountSegments.of(
                root if cache is None else cache.root,
                account_id,
                rows,
                retained_from_ms=retained_from_ms or 0,
                fetch=fetch,
            )
            try:
                result = read(segments)
            except SegmentUnavailable:
                raise ServiceUnavailable("the segment store cannot be reached; try again") from None
            except Exception as error:
                if not missing_file(error):
                    raise
                # A file retention dropped after the listing: start over with a new one,
                # unless the read's snapshot cannot see the drop (a read older than
                # retention's grace, which read budgets rule out): then the client
                # retries. A cached copy another process removed is fetched again.
                if cache is None and _listing(reader, account_id) == _listing_of(rows):
                    raise ServiceUnavailable("a segment was dropped meanwhile; try again") from None
            else:
                if _listing(reader, account_id) == _listing_of(rows):
                    return result
        time.sleep(RETRY_S * 2**attempt)  # the worker thread's, not the loop's
    raise ServiceUnavailable("the log store is being compacted; try again")


def _listing(reader: PageReader, account_id: str) -> list[tuple[Any, ...]]:
    return _listing_of(reader.all(account_segments(account_id=account_id)))


def _listing_of(rows: Sequence[Sequence[Any]]) -> list[tuple[Any, ...]]:
    return [(int(row[0]), str(row[1])) for row in rows]


_NOWHERE = Path("/nonexistent-segments")
_COLUMNS = ", ".join(LINE_COLUMNS)
# A ``LineRow``'s columns: no rendered record.
_UNRENDERED = f"{_COLUMNS}, NULL, NULL"
# ``export.service._weight``'s share of a record for its field names, quotes, numbers
# and short fields (host, app, level, ... are at most a few hundred characters each;
# typically tens).
RECORD_OVERHEAD = 200


@dataclass(slots=True)
class SegmentWalk:
    """The candidates of a scan in the segments, in (ts, id) order (descending when
    ``newest_first``), read in chunks like ``export.service.CandidateWalk``."""

    reader: PageReader
    files: list[SegmentFile]
    condition: DuckCondition
    from_ms: int
    to_ms: int
    max_id: int
    newest_first: bool
    budget: int
    wanted: Callable[[], int]
    # Rows with their record rendered by DuckDB where it can (``segments.with_records``):
    # for a walk whose rows are all taken as they are (no matcher reads their fields).
    render: bool = False
    exhausted: bool = False

    def rows(self, after: tuple[int, int] | None) -> Generator[LineRow, None, None]:
        """The walk goes through the range in time slices, each statement within one:
        a statement sorts only its slice's candidates (the files are sorted by ts, so
        DuckDB reads only the row groups the slice spans), never everything still
        ahead, which made a long walk cost the square of its length. A slice is sized
        to hold about the rows wanted (from the segments' line counts), doubled after a
        slice that held fewer, halved after one that held more."""
        if not self.files or self.condition.nothing:
            self.exhausted = True
            return
        direction = "DESC" if self.newest_first else "ASC"
        scanned = 0
        # The slice's near end: where the walk is (inclusive).
        edge = (
            (after[0] if after is not None else self.to_ms)
            if self.newest_first
            else (after[0] if after is not None else self.from_ms)
        )
        width = self._width(max(1, self.wanted()))
        while True:
            if (edge < self.from_ms) if self.newest_first else (edge > self.to_ms):
                self.exhausted = True
                return
            limit = max(1, min(self.budget - scanned, max(self.wanted(), min(scanned, MAX_CHUNK))))
            if self.newest_first:
                low, high = max(self.from_ms, edge - width + 1), edge
            else:
                low, high = edge, min(self.to_ms, edge + width - 1)
            spanned = [file for file in self.files if file.max_ts >= low and file.min_ts <= high]
            chunk = 0
            if spanned:
                where = "ts >= ? AND ts <= ? AND id <= ?"
                parameters: list[Any] = [low, high, self.max_id]
                if after is not None:
                    op = "<" if self.newest_first else ">"
                    where += f" AND (ts {op} ? OR (ts = ? AND id {op} ?))"
                    parameters += [after[0], after[0], after[1]]
                order = f"ts {direction}, id {direction}"
                statement = scan(
                    *located(spanned),
                    columns=_COLUMNS if self.render else _UNRENDERED,
                    where=f"{where} AND {self.condition.sql}",
                    parameters=[*parameters, *self.condition.parameters],
                    top=(order, limit),
                )
                sql = statement.sql
                if self.render:
                    sql = with_records(sql, order=order, overhead=RECORD_OVERHEAD)
                last: tuple[Any, ...] | None = None
                with closing(self.reader.segment_rows(sql, statement.parameters)) as rows:
                    for last in rows:
                        chunk += 1
                        yield as_line_row(last)
                if last is not None:
                    after = (last[1], last[0])
            scanned += chunk
            if chunk < limit:
                # The slice is done: the next one starts past it.
                edge = low - 1 if self.newest_first else high + 1
                width = width * 2 if chunk < limit // 2 else width
            else:
                # A full slice: more may wait in it, from where the walk is now.
                assert after is not None
                edge = after[0]
                width = max(1, width // 2)
            if scanned >= self.budget:
                return

    def _width(self, wanted: int) -> int:
        """A slice's length in ms expected to hold about ``wanted`` lines, at the
        segments' average density."""
        lines = sum(file.lines for file in self.files)
        low = min(file.min_ts for file in self.files)
        high = max(file.max_ts for file in self.files)
        density = lines / max(1, high - low + 1)
        return max(1, int(wanted / max(density, 1e-9)))


@dataclass(slots=True)
class MergedWalk:
    """Two walks' rows merged in (ts, id) order. A walk that stopped without being
    exhausted (its budget spent) stops the merge there: past its last row the other
    walk's rows could not be told apart from rows it has not read yet."""

    walks: list[Any]
    newest_first: bool
    exhausted: bool = False

    def rows(self, after: tuple[int, int] | None) -> Generator[LineRow, None, None]:
        streams = [walk.rows(after) for walk in self.walks]
        try:
            heads: list[LineRow | None] = [next(stream, None) for stream in streams]
            while True:
                for index, head in enumerate(heads):
                    if head is None and not self.walks[index].exhausted:
                        return  # a walk out of budget: stop here
                live = [index for index, head in enumerate(heads) if head is not None]
                if not live:
                    self.exhausted = True
                    return
                if len(live) == 1:
                    # Every other walk is exhausted: the rest is this one's, as it comes.
                    index = live[0]
                    yield heads[index]  # type: ignore[misc]
                    yield from streams[index]
                    self.exhausted = self.walks[index].exhausted
                    return
                pick = min(live, key=lambda index: _key(heads[index], self.newest_first))
                row = heads[pick]
                assert row is not None
                yield row
                heads[pick] = next(streams[pick], None)
        finally:
            for stream in streams:
                stream.close()


def _key(row: LineRow | None, newest_first: bool) -> tuple[int, int]:
    assert row is not None
    return (-row.ts, -row.id) if newest_first else (row.ts, row.id)


def segment_walk(
    segments: AccountSegments,
    *,
    reader: PageReader,
    where: ColumnElement[bool] | None,
    from_ms: int,
    to_ms: int,
    max_id: int,
    newest_first: bool,
    budget: int,
    wanted: Callable[[], int],
    render: bool = False,
) -> SegmentWalk:
    where = segments.retained(where)
    return SegmentWalk(
        reader=reader,
        files=searched(
            reader, segments, segments.spans(from_ms=from_ms, to_ms=to_ms, max_id=max_id), where
        ),
        condition=duck_condition(where),
        from_ms=from_ms,
        to_ms=to_ms,
        max_id=max_id,
        newest_first=newest_first,
        budget=budget,
        wanted=wanted,
        render=render,
    )


def searched(
    reader: PageReader,
    segments: AccountSegments,
    files: list[SegmentFile],
    where: ColumnElement[bool] | None,
) -> list[SegmentFile]:
    """The files that may hold a line ``where`` selects, each narrowed to the row
    groups that may (``segment_lookup``): the others are never opened (nor, from a
    segment bucket, downloaded). The indexes come from the registry, in the read's
    snapshot, once per process and segment. Files without an index are kept whole."""
    found = segment_lookup.lookup(where)
    if found is None or not files:
        return files
    root = str(segments.root)
    indexes = {
        name: index
        for (_root, name), index in segment_index.INDEXES.known(
            (root, file.name) for file in files
        ).items()
    }
    missing = [file.name for file in files if file.name not in indexes]
    for first in range(0, len(missing), INDEX_FETCH):
        # A few at a time: on PostgreSQL the rows pass through the event loop.
        rows = reader.all(
            select(LogSegment.path, LogSegment.trigram_filters).where(
                LogSegment.account_id == segments.account_id,
                LogSegment.path.in_(missing[first : first + INDEX_FETCH]),
            )
        )
        for name, data in rows:
            index = indexes[name] = segment_index.parse(data)
            segment_index.INDEXES.add((root, name), index)
    kept: list[SegmentFile] = []
    counts = dict.fromkeys(("searched", "skipped", "unindexed"), 0)
    blocks = {"searched": 0, "skipped": 0}
    for file in files:
        index = indexes.get(file.name)
        if index is None or index.lines != file.lines:
            counts["unindexed"] += 1
            kept.append(file)
            continue
        narrowed, candidates = segment_lookup.narrow(file, index, found)
        blocks["searched"] += candidates
        blocks["skipped"] += len(index.blocks) - candidates
        if narrowed is None:
            counts["skipped"] += 1
        else:
            counts["searched"] += 1
            kept.append(narrowed)
    for outcome, count in counts.items():
        if count:
            SEGMENT_FILES.labels(outcome).inc(count)
    for outcome, count in blocks.items():
        if count:
            SEGMENT_ROW_GROUPS.labels(outcome).inc(count)
    return kept


def located(files: list[SegmentFile]) -> tuple[list[str], RowRanges]:
    """The files' paths on this host (fetched from a segment bucket on first use) and
    the row ranges of those narrowed by the segment index, for ``segments.scan``."""
    paths: list[str] = []
    rows: dict[str, tuple[tuple[int, int], ...]] = {}
    for file in files:
        path = file.path
        paths.append(path)
        if file.rows is not None:
            rows[path] = file.rows
    return paths, rows


def segment_query(
    reader: SegmentReader,
    files: list[str],
    *,
    columns: str,
    where: ColumnElement[bool] | None,
    from_ms: int,
    to_ms: int,
    max_id: int,
    wrap: str = "{}",
    rows: RowRanges | None = None,
) -> Iterator[tuple[Any, ...]]:
    """Rows of ``SELECT columns FROM <the files> WHERE <range, where>``, placed in
    ``wrap`` at ``{}`` (an outer query of it); ``rows``: the row ranges of files
    narrowed by the segment index (``searched``, ``located``)."""
    condition = duck_condition(where)
    if not files or condition.nothing:
        return
    inner = scan(
        files,
        rows,
        columns=columns,
        where=f"ts >= ? AND ts <= ? AND id <= ? AND {condition.sql}",
        parameters=[from_ms, to_ms, max_id, *condition.parameters],
    )
    yield from reader.segment_rows(wrap.replace("{}", inner.sql, 1), inner.parameters)


def by_line_size(reader: SegmentReader, files: list[str]) -> list[tuple[list[str], str]]:
    """The files grouped by how a line's size (``size_bytes``) is read from them, each
    group with its DuckDB expression: the column, or for segments written before it
    was added, ``segments.SIZE_OF_LINE``."""
    if not files:
        return []
    sized = {str(row[0]) for row in reader.segment_rows(having_column(files), ["size_bytes"])}
    groups = (
        ([path for path in files if path in sized], "size_bytes"),
        ([path for path in files if path not in sized], SIZE_OF_LINE),
    )
    return [(group, size) for group, size in groups if group]

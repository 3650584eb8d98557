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

from sqlalchemy import ColumnElement

from tidegate.clock import now_ms
from tidegate.errors import ServiceUnavailable
from tidegate.logs.read_queries import LineRow
from tidegate.logs.reading import PageReader, SegmentReader
from tidegate.logs.segments import (
    LINE_COLUMNS,
    SIZE_OF_LINE,
    AccountSegments,
    DuckCondition,
    SegmentFile,
    SegmentUnavailable,
    account_retention,
    account_segments,
    duck_condition,
    having_column,
    missing_file,
    relation,
    retained_from,
)

T = TypeVar("T")

# Reads that found a move committed meanwhile start over; a compactor moves one segment
# per transaction, seconds apart, so a second attempt is the most one usually needs.
MAX_ATTEMPTS = 6
RETRY_S = 0.02
# The most rows one DuckDB statement of a walk asks for (then the next continues).
MAX_CHUNK = 20_000


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
            files = [file.path for file in self.files if file.max_ts >= low and file.min_ts <= high]
            chunk = 0
            if files:
                sql = (
                    f"SELECT {', '.join(LINE_COLUMNS)} FROM {relation(files)} "
                    "WHERE ts >= ? AND ts <= ? AND id <= ?"
                )
                parameters: list[Any] = [low, high, self.max_id]
                if after is not None:
                    op = "<" if self.newest_first else ">"
                    sql += f" AND (ts {op} ? OR (ts = ? AND id {op} ?))"
                    parameters += [after[0], after[0], after[1]]
                sql += f" AND {self.condition.sql} ORDER BY ts {direction}, id {direction} LIMIT ?"
                parameters += [*self.condition.parameters, limit]
                with closing(self.reader.segment_rows(sql, parameters)) as rows:
                    for row in rows:
                        chunk += 1
                        after = (row[1], row[0])
                        yield LineRow(*row)
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
) -> SegmentWalk:
    return SegmentWalk(
        reader=reader,
        files=segments.spans(from_ms=from_ms, to_ms=to_ms, max_id=max_id),
        condition=duck_condition(segments.retained(where)),
        from_ms=from_ms,
        to_ms=to_ms,
        max_id=max_id,
        newest_first=newest_first,
        budget=budget,
        wanted=wanted,
    )


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
) -> Iterator[tuple[Any, ...]]:
    """Rows of ``SELECT columns FROM <the files> WHERE <range, where>``, placed in
    ``wrap`` at ``{}`` (an outer query of it)."""
    condition = duck_condition(where)
    if not files or condition.nothing:
        return
    inner = (
        f"SELECT {columns} FROM {relation(files)} WHERE ts >= ? AND ts <= ? AND id <= ? "
        f"AND {condition.sql}"
    )
    yield from reader.segment_rows(
        wrap.replace("{}", inner, 1), [from_ms, to_ms, max_id, *condition.parameters]
    )


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

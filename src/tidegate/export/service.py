"""Export v2: one page of an account's stored lines.

The export's lines are fixed by its first request: those with ``from <= ts <= to``
and an id no larger than the high-water mark (the account's largest committed line id
when the first page was asked for), in (ts, id) order, oldest first for ``head`` and
newest first for ``tail``. Each page continues strictly after the last line the
previous one scanned, so no line is returned twice, and every line committed before the
first request is returned exactly once (see docs/export-and-tail.md for PostgreSQL).

``hosts``, ``apps``, ``levels`` and ``query`` become a SQL condition of the scan
(tidegate.logs.sql_filter), so the database returns only candidates, through its
indexes. When the condition is exact, the candidates are the page; otherwise each is
confirmed by the Python matcher, at most ``MAX_SCANNED_PER_REQUEST`` candidates per
request: a filter that SQL narrows little and that matches little over a long range
answers a short (possibly empty) page with a ``pagination_id`` to continue from where
the scan stopped. A page also stops before its records reach ``MAX_PAGE_BYTES``.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from contextlib import closing
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import orjson
from sqlalchemy import Select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate import json_codec
from tidegate.auth.secrets import Sealer
from tidegate.db.engine import Database
from tidegate.export.cursor import ExportCursor
from tidegate.export.schemas import MAX_SIZE, ExportRequest, ExportV1Request
from tidegate.logs import read_queries
from tidegate.logs.filter_plan import FilterPlan, newest_id, plan_filter
from tidegate.logs.filtering import LineFilter
from tidegate.logs.read_queries import LineRow
from tidegate.logs.reading import PageReader, run_off_loop
from tidegate.logs.record import OPTIONAL_FIELDS, public_record
from tidegate.logs.segments import AccountSegments
from tidegate.logs.sql_filter import (
    SqlFilter,
    translate,
)
from tidegate.logs.tiers import RECORD_OVERHEAD, MergedWalk, consistent, segment_walk

MAX_SCANNED_PER_REQUEST = 100_000
# A page stops early (with a pagination_id) rather than let its lines' text pass this:
# it bounds the answer and the worker's memory for a page of huge lines, and a 4 MiB
# answer still takes a client well under a second on any link worth exporting over.
MAX_PAGE_BYTES = 4 * 1024 * 1024


async def export_page(
    *,
    database: Database,
    session: AsyncSession,
    sealer: Sealer,
    account_id: str,
    request: ExportRequest,
) -> bytes:
    """The page as the JSON body of the answer (``schemas.ExportPage``). All of it (the
    cursor, the queries, decoding, filtering and encoding) runs in an export worker
    thread: tidegate.logs.reading."""

    def page(reader: PageReader) -> bytes:
        return encode(
            page_of_lines(
                reader=reader, sealer=sealer, account_id=account_id, request=request, render=True
            )
        )

    return await run_off_loop(database=database, session=session, account_id=account_id, page=page)


def page_of_lines(
    *,
    reader: PageReader,
    sealer: Sealer,
    account_id: str,
    request: ExportRequest,
    render: bool = False,
) -> dict[str, Any]:
    """One page, ``{"lines": [...], "pagination_id": ...}``; runs in the worker thread.
    The lines are ``export_record``'s: a ``_meta`` may be an ``orjson.Fragment`` (the
    stored text), for ``encode`` to write; read the other fields, or decode the page.
    ``render`` (a page that is only encoded): a line may also be a whole record's text
    as the segments rendered it (``orjson.Fragment``, ``segments.with_records``)."""
    request = replace(request, line_filter=request.line_filter.bound_to(account_id))
    return consistent(
        reader,
        account_id,
        lambda segments: _page(reader, sealer, account_id, request, segments, render),
    )


def _page(
    reader: PageReader,
    sealer: Sealer,
    account_id: str,
    request: ExportRequest,
    segments: AccountSegments,
    render: bool,
) -> dict[str, Any]:
    fingerprint = request.fingerprint()
    after: tuple[int, int] | None = None
    if request.pagination_id is None:
        max_id = newest_id(reader, account_id, segments)
        if max_id is None:
            return {"lines": [], "pagination_id": None}
    else:
        cursor = ExportCursor.open(
            request.pagination_id, sealer=sealer, account_id=account_id, fingerprint=fingerprint
        )
        max_id, after = cursor.max_id, (cursor.last_ts, cursor.last_id)

    scan = _Scan(
        reader=reader,
        account_id=account_id,
        request=request,
        max_id=int(max_id),
        after=after,
        segments=segments,
        render=render,
    )
    scan.run(plan_filter(reader, account_id, request.line_filter, request.size))

    if scan.exhausted or scan.after is None:
        return {"lines": scan.records, "pagination_id": None}
    last_ts, last_id = scan.after
    next_cursor = ExportCursor(account_id, fingerprint, int(max_id), last_ts, last_id)
    return {"lines": scan.records, "pagination_id": next_cursor.seal(sealer)}


# Export v1 answers every line at once (no pagination): it stops before its records pass
# this many bytes, or after this many scans of MAX_SCANNED_PER_REQUEST candidates each
# (a filter the database narrows little over a long range), with fewer lines than asked
# for. /v2/export pages through the rest. docs/api-v1.md
MAX_V1_BYTES = 32 * 1024 * 1024
MAX_V1_SCANS = 8
# The plan types whose v1 export answers up to 20,000 lines; every other plan 10,000.
V1_LARGE_PLANS = frozenset({"enterprise"})
V1_LINES_LARGE_PLAN = 20_000
V1_LINES_OTHER_PLANS = 10_000


def v1_line_cap(plan_type: str | None) -> int:
    return V1_LINES_LARGE_PLAN if plan_type in V1_LARGE_PLANS else V1_LINES_OTHER_PLANS


async def export_v1(
    *, database: Database, session: AsyncSession, account_id: str, request: ExportV1Request
) -> bytes:
    """Export v1's answer: the chosen lines, oldest first, as NDJSON or (``json``) one
    JSON array. Runs in an export worker thread, like a v2 page."""

    def work(reader: PageReader) -> bytes:
        records = lines_v1(reader=reader, account_id=account_id, request=request, render=True)
        if request.as_json:
            return encode(records)
        return b"".join(encode(record) + b"\n" for record in records)

    return await run_off_loop(database=database, session=session, account_id=account_id, page=work)


def lines_v1(
    *, reader: PageReader, account_id: str, request: ExportV1Request, render: bool = False
) -> list[Any]:
    """Up to the account plan's cap of lines (``size``, or the cap when larger or
    absent): the first ones from ``from`` (``head``) or the last ones up to ``to``
    (``tail``), oldest first either way, so they read like a log. The records are
    ``page_of_lines``'s (``render``: as there)."""
    cap = v1_line_cap(reader.scalar(read_queries.plan_of(account_id=account_id)))
    return consistent(
        reader,
        account_id,
        lambda segments: _lines_v1(reader, account_id, request, cap, segments, render),
    )


def _lines_v1(
    reader: PageReader,
    account_id: str,
    request: ExportV1Request,
    cap: int,
    segments: AccountSegments,
    render: bool,
) -> list[Any]:
    wanted = min(request.size or cap, cap)
    max_id = newest_id(reader, account_id, segments)
    if max_id is None:
        return []
    base = request.export
    plan = plan_filter(reader, account_id, base.line_filter, min(wanted, MAX_SIZE))
    records: list[Any] = []
    after: tuple[int, int] | None = None
    used_bytes = 0
    for _ in range(MAX_V1_SCANS):
        scan = _Scan(
            reader=reader,
            account_id=account_id,
            request=replace(base, size=min(wanted - len(records), MAX_SIZE)),
            max_id=int(max_id),
            after=after,
            segments=segments,
            render=render,
        )
        scan.run(plan)
        records.extend(scan.records)
        used_bytes += scan.used_bytes
        if (
            scan.exhausted
            or scan.after is None
            or len(records) >= wanted
            or used_bytes >= MAX_V1_BYTES
        ):
            break
        after = scan.after
    if base.prefer == "tail":
        records.reverse()
    return records


def encode(body: dict[str, Any] | list[Any]) -> bytes:
    # What orjson refuses (a lone surrogate of an older row, an integer past 64 bits) is
    # normalised as on every other path (json_codec).
    return json_codec.dumps(body)


def _weight(row: LineRow) -> int:
    """About the bytes a row's record takes in the answer (characters of its text, JSON
    escapes aside): the line, meta and tags, and a share for everything else."""
    return (
        len(row.line)
        + (len(row.meta_json) if row.meta_json is not None else 0)
        + (len(row.meta_unindexed_json) if row.meta_unindexed_json is not None else 0)
        + (len(row.tags_json) if row.tags_json is not None else 0)
        + RECORD_OVERHEAD
    )


class _Scan:
    """One request's walk along the candidates, from ``after`` on."""

    def __init__(
        self,
        *,
        reader: PageReader,
        account_id: str,
        request: ExportRequest,
        max_id: int,
        after: tuple[int, int] | None,
        segments: AccountSegments,
        render: bool = False,
    ) -> None:
        self.reader = reader
        self.render = render
        self.segments = segments
        self.account_id = account_id
        self.request = request
        self.max_id = max_id
        self.after = after
        # ``export_record``'s, or (``render``) a record's text the segments rendered.
        self.records: list[dict[str, Any] | orjson.Fragment] = []
        self.exhausted = False
        self.used_bytes = 0  # about the records' size in the answer (``_weight``)

    def run(self, plan: FilterPlan) -> None:
        """Fills the page. ``after`` ends as the last row the page used: its last record,
        or past it the last candidate the matcher turned down."""
        sql = plan.sql
        size = self.request.size
        newest_first = self.request.prefer == "tail"
        budget = size + 1 if sql.exact else MAX_SCANNED_PER_REQUEST

        def scan(
            from_ms: int, to_ms: int, after: tuple[int, int] | None, limit: int
        ) -> Select[*tuple[Any, ...]]:
            return read_queries.scan_lines(
                account_id=self.account_id,
                from_ms=from_ms,
                to_ms=to_ms,
                max_id=self.max_id,
                after=after,
                newest_first=newest_first,
                limit=limit,
                where=sql.where,
                drive=plan.drive,
            )

        def wanted() -> int:
            return size + 1 - len(self.records)

        hot: CandidateWalk | SlicedWalk
        if (
            sql.where is not None
            and size <= MAX_SLICED_PAGE
            and self.reader.dialect == "postgresql"
        ):
            hot = SlicedWalk(
                reader=self.reader,
                scan=scan,
                from_ms=self.request.from_ms,
                to_ms=self.request.to_ms,
                newest_first=newest_first,
                budget=budget,
                wanted=wanted,
            )
        else:
            hot = CandidateWalk(
                reader=self.reader,
                scan=lambda after, limit: scan(
                    self.request.from_ms, self.request.to_ms, after, limit
                ),
                # Exact: the page and one more row (whether there is more), one statement.
                budget=budget,
                wanted=wanted,
            )
        walk: CandidateWalk | SlicedWalk | MergedWalk = hot
        exact = sql.exact
        if self.segments.segments:
            cold_sql = segment_filter(self.request.line_filter)
            # A row of either tier is confirmed unless both conditions are exact.
            exact = exact and cold_sql.exact
            cold = segment_walk(
                self.segments,
                reader=self.reader,
                where=cold_sql.where,
                from_ms=self.request.from_ms,
                to_ms=self.request.to_ms,
                max_id=self.max_id,
                newest_first=newest_first,
                budget=size + 1 if cold_sql.exact else MAX_SCANNED_PER_REQUEST,
                wanted=lambda: size + 1 - len(self.records),
                # Only rows no matcher reads (the record is all Python gets of them).
                render=self.render and exact,
            )
            walk = MergedWalk([hot, cold], newest_first=newest_first)
        with closing(walk.rows(self.after)) as rows:
            for row in rows:
                if len(self.records) >= size:
                    return  # a row past a full page: there is more
                if not self._take(row, exact=exact):
                    return  # the page is full by its bytes
        self.exhausted = walk.exhausted

    def _take(self, row: LineRow, *, exact: bool) -> bool:
        """Confirms a scanned row and adds its record; False when the page is full by
        its bytes (the next page starts with this row)."""
        text = row.record_json  # rendered by the database (only rows taken as they are)
        if exact:
            meta = NOT_READ  # nothing to match: the meta is read only if it must be
        else:
            meta = row.meta()
            if not row_matches(self.request.line_filter, row, meta):
                self.after = (row.ts, row.id)
                return True
        weight = _weight(row) if text is None else row.record_weight or 0
        if self.records and self.used_bytes + weight > MAX_PAGE_BYTES:
            return False
        self.used_bytes += weight
        self.records.append(export_record(row, meta) if text is None else orjson.Fragment(text))
        self.after = (row.ts, row.id)
        return True


def chunk_of_lines(
    reader: PageReader,
    account_id: str,
    *,
    from_ms: int,
    to_ms: int,
    max_id: int | None,
    after: tuple[int, int] | None,
    size: int,
) -> tuple[int | None, list[LineRow]]:
    """Up to ``size`` of the account's lines of the range after ``after``, oldest first,
    from both tiers (archiving's chunks: each in a consistent view of its own, a keyset
    continuing where the one before stopped, exactly-once while lines move like export
    pages), and the largest id read up to: ``max_id``, or when None the account's
    newest line's in either tier now (None: the account has no line)."""

    def read(segments: AccountSegments) -> tuple[int | None, list[LineRow]]:
        top = max_id if max_id is not None else newest_id(reader, account_id, segments)
        rows: list[LineRow] = []
        if top is None:
            return None, rows
        hot = CandidateWalk(
            reader=reader,
            scan=lambda after, limit: read_queries.scan_lines(
                account_id=account_id,
                from_ms=from_ms,
                to_ms=to_ms,
                max_id=top,
                after=after,
                newest_first=False,
                limit=limit,
            ),
            budget=size,
            wanted=lambda: max(1, size - len(rows)),
        )
        walk: CandidateWalk | MergedWalk = hot
        if segments.segments:
            cold = segment_walk(
                segments,
                reader=reader,
                where=None,
                from_ms=from_ms,
                to_ms=to_ms,
                max_id=top,
                newest_first=False,
                budget=size,
                wanted=lambda: max(1, size - len(rows)),
            )
            walk = MergedWalk([hot, cold], newest_first=False)
        with closing(walk.rows(after)) as stream:
            for row in stream:
                rows.append(row)
                if len(rows) >= size:
                    break
        return top, rows

    return consistent(reader, account_id, read)


def segment_filter(line_filter: LineFilter) -> SqlFilter:
    """The filter's form for the segments (DuckDB, tidegate.logs.segments)."""
    return translate(line_filter, dialect="duckdb")


def row_matches(line_filter: LineFilter, row: LineRow, meta: dict[str, Any] | None) -> bool:
    """Whether a scanned row (its ``meta`` decoded) is one of ``line_filter``'s lines."""
    return line_filter.matches(
        line=row.line,
        host=row.host,
        app=row.app,
        level=row.level,
        file=row.file,
        meta=meta,
        tags=row.tags() if line_filter.tags else None,
    )


# PostgreSQL: the most rows one statement of a walk along candidates asks for.
MAX_CHUNK = 20_000


def chunk_limit(*, dialect: str, wanted: int, scanned: int, budget: int) -> int:
    """The rows the next statement of a ``CandidateWalk`` asks for, ``scanned`` rows into
    a walk of at most ``budget``: on PostgreSQL ``wanted``, then as many as were scanned
    so far (doubling) up to ``MAX_CHUNK``, never past the budget. The LIMIT is what the
    planner plans for: asked for a whole budget (100,000 rows) a page stops after 10,000
    lines of, the analyzed planner sorted every candidate of a common word rather than
    walk the time index until the page was full (1.4 s against 0.6 s); a LIMIT near the
    candidates left (60,000 of 300,000 lines) made it do the same (docs/log-store.md),
    hence the cap. SQLite (no
    statistics, a plan that does not follow the LIMIT) asks for the rest of the budget
    at once."""
    if dialect != "postgresql":
        return budget - scanned
    return min(budget - scanned, max(wanted, min(scanned, MAX_CHUNK)))


@dataclass(slots=True)
class CandidateWalk:
    """The rows of one walk along a scan's candidates (export pages, aggregations), read
    in chunks: each statement (``scan(after, limit)``) asks for ``chunk_limit`` rows of
    ``wanted()`` and continues after the last row the one before read, up to ``budget``
    rows in all. ``exhausted`` once a statement gave fewer rows than it asked for."""

    reader: PageReader
    scan: Callable[[tuple[int, int] | None, int], Select[*tuple[Any, ...]]]
    budget: int
    wanted: Callable[[], int]
    exhausted: bool = False

    def rows(self, after: tuple[int, int] | None) -> Generator[LineRow, None, None]:
        """The candidates after ``after``; close the iterator to stop early."""
        scanned = 0
        while True:
            limit = chunk_limit(
                dialect=self.reader.dialect,
                wanted=self.wanted(),
                scanned=scanned,
                budget=self.budget,
            )
            chunk = 0
            last: LineRow | None = None
            with closing(self.reader.rows(self.scan(after, limit))) as rows:
                for last in rows:
                    chunk += 1
                    yield last
            if last is not None:
                after = (last.ts, last.id)
            scanned += chunk
            if chunk < limit:
                self.exhausted = True
                return
            if scanned >= self.budget:
                return


# Pages of at most this many lines (the web app's: 100, then 500) walk a filtered range
# in slices on PostgreSQL (``SlicedWalk``); a bigger page (an export's 10,000) fills
# from more of the range, where the slices' extra statements cost more than the sort
# they save (a common word's 10,000 lines: 0.6 s whole, 0.9-1.0 s in slices).
MAX_SLICED_PAGE = 1_000
# The first slice of a sliced walk: this share of the range, then each slice four times
# the one before (a 16th, a quarter, the rest).
FIRST_SLICE_SHARE = 16
SLICE_GROWTH = 4


def time_slices(
    from_ms: int, to_ms: int, *, newest_first: bool, after: tuple[int, int] | None
) -> Generator[tuple[int, int], None, None]:
    """``[from_ms, to_ms]`` (from ``after`` on, when given) as adjacent inclusive ranges in
    the walk's direction: the first a ``FIRST_SLICE_SHARE``-th of the whole range, each
    next ``SLICE_GROWTH`` times wider, the last ending at the range's other end."""
    if after is not None:
        if newest_first:
            to_ms = min(to_ms, after[0])
        else:
            from_ms = max(from_ms, after[0])
    width = max(1, -(-(to_ms - from_ms + 1) // FIRST_SLICE_SHARE))  # rounded up: three at most
    low, high = from_ms, to_ms
    while low <= high:
        if newest_first:
            start = max(low, high - width + 1)
            yield start, high
            high = start - 1
        else:
            end = min(high, low + width - 1)
            yield low, end
            low = end + 1
        width *= SLICE_GROWTH


@dataclass(slots=True)
class SlicedWalk:
    """A ``CandidateWalk`` over ``time_slices`` of the range, one after the other: the
    rows of the range in the same order, each statement bounded to its slice (PostgreSQL,
    a page of at most ``MAX_SLICED_PAGE`` lines with a filter).

    PostgreSQL plans a filtered page as "every candidate of the range, sorted" when it
    takes the filter's index (trigrams, a folded column): the newest 100 lines of a meta
    value held by 2% of a million lines read and sorted all of them (0.3 s; 2 s at five
    million lines), where the newest 16th of the range took 25-36 ms (docs/log-store.md,
    "Newest first in slices"). A page that fills in its first slice reads only that; one
    that does not pays a statement per slice (at most three: a 16th, a quarter, the
    rest). ``budget`` is the walk's in all: a slice that stops on it stops the walk
    there (not exhausted)."""

    reader: PageReader
    scan: Callable[[int, int, tuple[int, int] | None, int], Select[*tuple[Any, ...]]]
    from_ms: int
    to_ms: int
    newest_first: bool
    budget: int
    wanted: Callable[[], int]
    exhausted: bool = False

    def rows(self, after: tuple[int, int] | None) -> Generator[LineRow, None, None]:
        """The candidates after ``after``; close the iterator to stop early."""
        left = self.budget
        slices = time_slices(self.from_ms, self.to_ms, newest_first=self.newest_first, after=after)
        for low, high in slices:
            walk = CandidateWalk(
                reader=self.reader,
                scan=partial(self.scan, low, high),
                budget=left,
                wanted=self.wanted,
            )
            with closing(walk.rows(after)) as rows:
                for row in rows:
                    left -= 1
                    yield row
            if not walk.exhausted or left <= 0:
                return  # the budget is spent: more may follow in this slice
        self.exhausted = True


# ``export_record``'s meta when the page did not decode it (no filter to confirm).
NOT_READ: Any = object()
# The record's optional short fields in ``public_record``'s order, by their index in
# ``LineRow``.
_OPTIONAL_FIELDS = tuple((name, LineRow._fields.index(field)) for name, field in OPTIONAL_FIELDS)


def export_record(row: LineRow, meta: dict[str, Any] | None = NOT_READ) -> dict[str, Any]:
    """``line_record(row, row.meta())`` as export pages build it for every line (the
    same bytes once encoded), without its intermediate objects: the fields set directly,
    and the stored meta text passed through to the encoder (``orjson.Fragment``) when
    it is already what encoding the decoded meta writes (``json_codec.in_own_spelling``)
    and no unindexed meta is merged into it, so that it is neither decoded nor encoded
    again. ``meta``: the row's meta when the page decoded it (to confirm a filter)."""
    record: dict[str, Any] = {"_id": str(row.id), "_ts": row.ts, "_host": row.host}
    for name, index in _OPTIONAL_FIELDS:
        if (value := row[index]) is not None:
            record[name] = value
    if row.tags_json is not None and (tags := row.tags()):
        record["_tag"] = list(tags)
    text = row.meta_json
    if row.meta_unindexed_json is None and text is not None and json_codec.in_own_spelling(text):
        record["_meta"] = orjson.Fragment(text)
    else:
        if meta is NOT_READ:
            meta = row.meta()
        unindexed = row.meta_unindexed()
        if unindexed is not None:
            record["_meta"] = {**unindexed, **(meta or {})}
        elif meta is not None:
            record["_meta"] = dict(meta)
    record["_line"] = row.line
    return record


def line_record(row: LineRow, meta: dict[str, Any] | None) -> dict[str, Any]:
    """The line as export (and archiving) return it."""
    return public_record(
        line=row.line,
        ts=row.ts,
        host=row.host,
        app=row.app,
        level=row.level,
        env=row.env,
        file=row.file,
        ip=row.ip,
        mac=row.mac,
        tags=row.tags(),
        meta=meta,
        line_id=row.id,
        meta_unindexed=row.meta_unindexed(),
    )

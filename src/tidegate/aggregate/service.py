"""Aggregations: how many of an account's lines a filter selects, per time bucket and
per value of host, app and level.

The filter is planned exactly as for an export page (``logs.filter_plan.plan_filter``:
translated by tidegate.logs.sql_filter and, on SQLite, tuned to the data). When the
translation is exact, the database counts (a count per bucket, or GROUP BY, and
GROUP BY per field). Otherwise the candidates it selects are read newest first and the
Python matcher confirms each before it is counted, at most ``MAX_CANDIDATES`` per
request: past that the answer counts the lines from ``counted_from`` on only and says
``exact: false``. All of it runs in an export worker thread (tidegate.logs.reading),
never on the event loop.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import closing
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.aggregate import repository, schemas
from tidegate.aggregate.schemas import TOP_FIELDS, AggregateRequest
from tidegate.db.engine import Database
from tidegate.export.service import CandidateWalk, row_matches, segment_filter
from tidegate.logs import read_queries
from tidegate.logs.filter_plan import FilterPlan, newest_id, plan_filter
from tidegate.logs.filtering import LineFilter
from tidegate.logs.read_queries import LineRow
from tidegate.logs.reading import PageReader, run_off_loop
from tidegate.logs.segments import AccountSegments, RowRanges
from tidegate.logs.sql_filter import SqlFilter
from tidegate.logs.tiers import consistent, located, searched, segment_query
from tidegate.search.compiler import BUILTIN_FIELDS, FieldGetter, field_getter
from tidegate.search.line import LogLine as SearchLine
from tidegate.search.values import as_text

SECOND_MS = 1_000
MINUTE_MS = 60 * SECOND_MS
HOUR_MS = 60 * MINUTE_MS
DAY_MS = 24 * HOUR_MS
WEEK_MS = 7 * DAY_MS
# Bucket widths people read at a glance; past a week, multiples of a week.
NICE_WIDTHS_MS = (
    SECOND_MS, 5 * SECOND_MS, 10 * SECOND_MS, 30 * SECOND_MS,
    MINUTE_MS, 5 * MINUTE_MS, 10 * MINUTE_MS, 30 * MINUTE_MS,
    HOUR_MS, 3 * HOUR_MS, 6 * HOUR_MS, 12 * HOUR_MS,
    DAY_MS, WEEK_MS,
)  # fmt: skip

# Candidates one request confirms with the matcher at most. Each costs reading its row
# and matching it (and decoding its meta when the query names a meta field): 3.5-7 µs
# of CPU measured (docs/aggregate.md), so the cap holds a request to a second or two.
MAX_CANDIDATES = 200_000
# PostgreSQL: the candidates the first statement of a confirmed walk asks for (then
# doubling): an export page's worth.
FIRST_CHUNK = 10_001


def bucket_count(from_ms: int, to_ms: int, width_ms: int) -> int:
    """Buckets of ``width_ms``, aligned to multiples of it, from the one holding
    ``from_ms`` to the one holding ``to_ms``."""
    return to_ms // width_ms - from_ms // width_ms + 1


def bucket_width(from_ms: int, to_ms: int, buckets: int) -> int:
    """The smallest nice width (NICE_WIDTHS_MS, then multiples of a week) that covers
    ``from_ms..to_ms`` in at most ``buckets`` aligned buckets."""
    for width in NICE_WIDTHS_MS:
        if bucket_count(from_ms, to_ms, width) <= buckets:
            return width
    # There are always at least (to - from) / width buckets, so no smaller multiple can
    # do; alignment may need a few more weeks than that.
    weeks = max(2, (to_ms - from_ms) // (WEEK_MS * buckets))
    while bucket_count(from_ms, to_ms, weeks * WEEK_MS) > buckets:
        weeks += 1
    return weeks * WEEK_MS


async def aggregate(
    *, database: Database, session: AsyncSession, account_id: str, request: AggregateRequest
) -> bytes:
    """The aggregation as the JSON body of the answer (``schemas.Aggregation``),
    computed and encoded in an export worker thread."""

    def work(reader: PageReader) -> bytes:
        answer = aggregation(reader=reader, account_id=account_id, request=request)
        return answer.model_dump_json(by_alias=True, exclude_none=True).encode()

    return await run_off_loop(database=database, session=session, account_id=account_id, page=work)


# A confirmed line: ts // width, host, app, level, and the folded values of the extra
# fields asked for (one tuple per field).
_Counted = tuple[int, str | None, str | None, str | None, tuple[tuple[str, ...], ...]]


@dataclass(slots=True)
class _Tally:
    """Counts per bucket and per folded value."""

    first_bucket: int  # ts // width of the first bucket
    histogram: list[int]
    fields: tuple[str, ...] = ()
    values: dict[str, Counter[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.values = {name: Counter() for name in (*TOP_FIELDS, *self.fields)}

    def add_lines(self, lines: Iterable[_Counted]) -> None:
        histogram, first = self.histogram, self.first_bucket
        hosts, apps, levels = (self.values[name] for name in TOP_FIELDS)
        extra = [self.values[name] for name in self.fields]
        for bucket, host, app, level, found in lines:
            histogram[bucket - first] += 1
            if host is not None:
                hosts[host.casefold()] += 1
            if app is not None:
                apps[app.casefold()] += 1
            if level is not None:
                levels[level.casefold()] += 1
            for counts, values in zip(extra, found, strict=True):
                counts.update(values)

    def top(self, name: str, limit: int) -> list[tuple[str, int]]:
        counts = self.values[name]
        return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:limit]


def aggregation(
    *, reader: PageReader, account_id: str, request: AggregateRequest
) -> schemas.Aggregation:
    """Runs in the worker thread."""
    request = replace(request, line_filter=request.line_filter.bound_to(account_id))
    return consistent(
        reader, account_id, lambda segments: _aggregation(reader, account_id, request, segments)
    )


def _aggregation(
    reader: PageReader, account_id: str, request: AggregateRequest, segments: AccountSegments
) -> schemas.Aggregation:
    width = bucket_width(request.from_ms, request.to_ms, request.buckets)
    first_bucket = request.from_ms // width
    histogram = [0] * bucket_count(request.from_ms, request.to_ms, width)
    top: dict[str, list[tuple[str, int]]] = {name: [] for name in TOP_FIELDS}
    extra: dict[str, list[tuple[str, int]]] = {name: [] for name in request.fields}
    counted_from = request.from_ms
    max_id = newest_id(reader, account_id, segments)
    if max_id is not None:
        scope = _Scope(account_id=account_id, request=request, max_id=int(max_id), width=width)
        # Every candidate is wanted (up to the cap), not a page of them.
        plan = plan_filter(reader, account_id, request.line_filter, MAX_CANDIDATES)
        cold = _Cold.of(reader, segments, request, max_id=int(max_id), width=width)
        # Top values of other fields: each line's meta is read, so the lines are walked.
        exact = plan.sql.exact and (cold is None or cold.sql.exact)
        if exact and not (request.fields and request.top):
            for bucket, lines in scope.bucket_counts(reader, plan):
                histogram[bucket - first_bucket] = lines
            if cold is not None:
                for bucket, lines in cold.bucket_counts():
                    histogram[bucket - first_bucket] += lines
            if request.top:
                top = {name: scope.top_values(reader, plan, name, cold=cold) for name in TOP_FIELDS}
        else:
            wanted = request.fields if request.top else ()
            tally = _Tally(first_bucket=first_bucket, histogram=histogram, fields=wanted)
            counted_from = scope.confirm(reader, plan, tally)
            if cold is not None and cold.sql.exact and not wanted:
                # The segments' condition is exact: DuckDB counts them, from where the
                # row store's count is complete.
                cold.add_counts(tally, from_ms=counted_from)
            elif cold is not None:
                # The segments are confirmed whole (no cap), from the same time.
                cold.confirm(tally, from_ms=counted_from)
            top = {name: tally.top(name, request.top) for name in TOP_FIELDS}
            extra.update({name: tally.top(name, request.top) for name in wanted})
    return schemas.Aggregation(
        from_ms=request.from_ms,
        to=request.to_ms,
        bucket_ms=width,
        total=sum(histogram),
        histogram=[
            schemas.Bucket(ts=(first_bucket + index) * width, count=lines)
            for index, lines in enumerate(histogram)
        ],
        top=schemas.TopValues(
            **{
                name: [schemas.TopValue(value=value, count=lines) for value, lines in values]
                for name, values in top.items()
            },
            fields={
                name: [schemas.TopValue(value=value, count=lines) for value, lines in values]
                for name, values in extra.items()
            }
            if request.fields
            else None,
        ),
        exact=counted_from == request.from_ms,
        counted_from=counted_from,
    )


@dataclass(frozen=True, slots=True)
class _Scope:
    """The lines one aggregation reads: the account's, in the range, committed when it
    began."""

    account_id: str
    request: AggregateRequest
    max_id: int
    width: int

    def bucket_counts(self, reader: PageReader, plan: FilterPlan) -> Iterable[tuple[int, int]]:
        """``(ts // width, lines)`` of the buckets that hold lines (an exact plan)."""
        request = self.request
        if plan.sql.where is None:
            first_ms = request.from_ms // self.width * self.width
            statement = repository.counts_per_bucket(
                account_id=self.account_id,
                from_ms=request.from_ms,
                to_ms=request.to_ms,
                max_id=self.max_id,
                first_ms=first_ms,
                width_ms=self.width,
            )
            return (
                (int(start) // self.width, int(lines)) for start, lines in reader.all(statement)
            )
        statement = repository.bucket_counts(
            account_id=self.account_id,
            from_ms=request.from_ms,
            to_ms=request.to_ms,
            max_id=self.max_id,
            where=plan.sql.where,
            width_ms=self.width,
        )
        return ((int(bucket), int(lines)) for bucket, lines in reader.all(statement))

    def top_values(
        self, reader: PageReader, plan: FilterPlan, name: str, *, cold: _Cold | None = None
    ) -> list[tuple[str, int]]:
        statement = repository.top_values(
            field=name,
            account_id=self.account_id,
            from_ms=self.request.from_ms,
            to_ms=self.request.to_ms,
            max_id=self.max_id,
            where=plan.sql.where,
            # With segments, every value's count: the top of a sum is not the sum of tops.
            limit=self.request.top if cold is None else None,
        )
        found = [(str(value), int(lines)) for value, lines in reader.all(statement)]
        if cold is None:
            return found
        counts: Counter[str] = Counter(cold.value_counts(name))
        for value, lines in found:
            counts[value] += lines
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        return ranked[: self.request.top]

    def confirm(self, reader: PageReader, plan: FilterPlan, tally: _Tally) -> int:
        """Counts the candidates the matcher confirms, newest first, into ``tally``;
        returns the time from which on every line was counted.

        Past ``MAX_CANDIDATES`` the walk stops at a candidate at ``ts``: lines after
        ``ts`` have all been counted, and those at ``ts`` itself (some seen, some not)
        are left out, so the counts are exactly those of ``ts + 1`` to ``to``."""
        line_filter = self.request.line_filter
        getters = [field_getter(name) for name in tally.fields]
        with_meta = bool(getters) or _reads_meta(line_filter)
        # The matching lines at the time being read (their bucket, host, app and level):
        # counted once the walk is past that time.
        pending: list[_Counted] = []
        pending_ts = -1
        examined = 0
        walk = CandidateWalk(
            reader=reader,
            scan=lambda after, limit: read_queries.scan_lines(
                account_id=self.account_id,
                from_ms=self.request.from_ms,
                to_ms=self.request.to_ms,
                max_id=self.max_id,
                after=after,
                newest_first=True,
                limit=limit,
                where=plan.sql.where,
                drive=plan.drive,
            ),
            budget=MAX_CANDIDATES + 1,
            wanted=lambda: FIRST_CHUNK,
        )
        with closing(walk.rows(None)) as rows:
            for row in rows:
                if row.ts != pending_ts:
                    tally.add_lines(pending)
                    pending.clear()
                    pending_ts = row.ts
                examined += 1
                if examined > MAX_CANDIDATES:
                    return row.ts + 1
                meta = row.meta() if with_meta else None
                if row_matches(line_filter, row, meta):
                    found = _field_values(getters, row.line, meta) if getters else ()
                    pending.append((row.ts // self.width, row.host, row.app, row.level, found))
        tally.add_lines(pending)
        return self.request.from_ms


@dataclass(frozen=True, slots=True)
class _Cold:
    """The segments' part of an aggregation (DuckDB)."""

    reader: PageReader
    files: list[str]
    rows: RowRanges  # of the files narrowed by the segment index
    newest_ts: list[int]  # of each file's lines (those of its kept row groups)
    sql: SqlFilter
    request: AggregateRequest
    max_id: int
    width: int
    cache: dict[int, tuple[dict[int, int], dict[str, dict[str, int]]]] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        reader: PageReader,
        segments: AccountSegments,
        request: AggregateRequest,
        *,
        max_id: int,
        width: int,
    ) -> _Cold | None:
        spans = segments.spans(from_ms=request.from_ms, to_ms=request.to_ms, max_id=max_id)
        if not spans:
            return None
        sql = segment_filter(request.line_filter)
        # Lines past the account's retention are counted by no aggregation.
        sql = replace(sql, where=segments.retained(sql.where))
        # Only the segments (and row groups) that may hold a match are opened.
        found = searched(reader, segments, spans, sql.where)
        files, rows = located(found)
        if not files:
            return None  # no segment can hold a match
        newest = [file.max_ts for file in found]
        return cls(reader, files, rows, newest, sql, request, max_id, width)

    def _rows(
        self,
        columns: str,
        *,
        from_ms: int | None = None,
        wrap: str = "{}",
    ) -> Iterator[tuple[Any, ...]]:
        files = self.files
        if from_ms is not None and from_ms > self.request.from_ms:
            # From where the row store's capped count starts: a segment wholly older
            # counts nothing, and is not opened.
            files = [
                path
                for path, newest in zip(files, self.newest_ts, strict=True)
                if newest >= from_ms
            ]
        return segment_query(
            self.reader,
            files,
            columns=columns,
            where=self.sql.where,
            from_ms=self.request.from_ms if from_ms is None else from_ms,
            to_ms=self.request.to_ms,
            max_id=self.max_id,
            wrap=wrap,
            rows=self.rows,
        )

    def bucket_counts(self) -> Iterator[tuple[int, int]]:
        yield from self._counts(self.request.from_ms)[0].items()

    def value_counts(self, name: str) -> dict[str, int]:
        return self._counts(self.request.from_ms)[1][name]

    def add_counts(self, tally: _Tally, *, from_ms: int) -> None:
        """Adds the segments' counts from ``from_ms`` on to ``tally`` (an exact
        condition: DuckDB counts, nothing is confirmed)."""
        buckets, values = self._counts(from_ms)
        for bucket, lines in buckets.items():
            tally.histogram[bucket - tally.first_bucket] += lines
        for name, counts in values.items():
            tally.values[name].update(counts)

    def _counts(self, from_ms: int) -> tuple[dict[int, int], dict[str, dict[str, int]]]:
        """The histogram and every value's count of host, app and level, in one pass
        over the segments (GROUPING SETS): the scan, not the counting, is the cost."""
        if from_ms in self.cache:
            return self.cache[from_ms]
        sets = "(b), (host), (app), (level)" if self.request.top else "(b)"
        rows = self._rows(
            f"ts // {int(self.width)} AS b, host_folded AS host, app_folded AS app, "
            "level_folded AS level",
            from_ms=from_ms,
            wrap="SELECT GROUPING(b), b, host, app, level, count(*) FROM ({}) "
            f"GROUP BY GROUPING SETS ({sets})",
        )
        buckets: dict[int, int] = {}
        values: dict[str, dict[str, int]] = {name: {} for name in TOP_FIELDS}
        for is_value, bucket, host, app, level, lines in rows:
            if not is_value:
                buckets[int(bucket)] = int(lines)
                continue
            for name, value in (("host", host), ("app", app), ("level", level)):
                if value is not None:
                    values[name][str(value)] = int(lines)
        self.cache[from_ms] = (buckets, values)
        return buckets, values

    def confirm(self, tally: _Tally, *, from_ms: int) -> None:
        """Counts every line of the segments the matcher confirms, from ``from_ms``."""
        line_filter = self.request.line_filter
        getters = [field_getter(name) for name in tally.fields]
        counted: list[_Counted] = []
        rows = self._rows(
            "id, ts, host, app, level, NULL, file, NULL, NULL, tags, meta, line", from_ms=from_ms
        )
        for values in rows:
            row = LineRow(*values)
            meta = row.meta()
            if row_matches(line_filter, row, meta):
                found = _field_values(getters, row.line, meta) if getters else ()
                counted.append((row.ts // self.width, row.host, row.app, row.level, found))
                if len(counted) >= _TALLY_BATCH:
                    tally.add_lines(counted)
                    counted.clear()
        tally.add_lines(counted)


_TALLY_BATCH = 4_096


def _field_values(
    getters: list[FieldGetter], line: str, meta: dict[str, object] | None
) -> tuple[tuple[str, ...], ...]:
    """Each field's folded values in the line (an array's scalars each once; objects
    and missing fields are no value)."""
    if meta is None:
        return tuple(() for _ in getters)
    view = SearchLine(line, meta=meta)
    found: list[tuple[str, ...]] = []
    for get in getters:
        value = get(view)
        items = value if isinstance(value, list | tuple) else (value,)
        texts = (as_text(item) for item in items if item is not None)
        found.append(tuple(dict.fromkeys(text.casefold() for text in texts if text is not None)))
    return tuple(found)


def _reads_meta(line_filter: LineFilter) -> bool:
    """Whether the filter's query looks into ``meta`` (a field that is not built in):
    only then is each candidate's meta decoded."""
    query = line_filter.query
    return query is not None and not query.fields <= BUILTIN_FIELDS

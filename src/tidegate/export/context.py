"""A line's context: the lines just before and after it from the same host and app (or,
as asked, the same host, or the whole account), as a person reading a hit wants to see
it (``GET /v1/export/context``, docs/export-and-tail.md).

The line is found by its id within the account (another account's id is not found).
Its neighbours are walked from it in (ts, id) order, the export's total order, along
the ``(account_id, host_folded, ts, id)`` index, so each side is one bounded range
read on both backends. A person in groups sees only their scope: the line must be in
it (or it is not found), and the neighbours are only lines in it; when the scope's SQL
form is not exact, candidates are confirmed by the matcher, at most
``MAX_SCANNED_PER_SIDE`` per side. Runs in an export worker thread."""

from __future__ import annotations

from collections.abc import Generator
from contextlib import closing
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, true

from tidegate.errors import BadRequest
from tidegate.export.schemas import bounded_int
from tidegate.export.service import CandidateWalk, line_record, row_matches, segment_filter
from tidegate.logs import read_queries
from tidegate.logs.filtering import LineFilter, parse_line_filter
from tidegate.logs.read_queries import LineRow
from tidegate.logs.reading import PageReader
from tidegate.logs.record import MAX_LINE_ID, parse_line_id
from tidegate.logs.segments import (
    LINE_COLUMNS,
    AccountSegments,
    duck_condition,
    relation,
)
from tidegate.logs.sql_filter import translate
from tidegate.logs.tiers import MergedWalk, consistent, segment_walk
from tidegate.models import LogLine

DEFAULT_LINES = 20
MAX_LINES = 100
# A scope the database cannot decide alone: candidates confirmed per side at most.
MAX_SCANNED_PER_SIDE = 10_000
# Whose lines are the context: the same host and app (the default), the same host, or
# every line of the account.
AROUND = ("source", "host", "account")

_lines = LogLine.__table__.c


@dataclass(frozen=True, slots=True)
class ContextRequest:
    line_id: int
    before: int
    after: int
    # The lines the reader may see (a group's scope), or one that selects everything.
    line_filter: LineFilter
    around: str = "source"


def parse_context_request(
    *,
    line: str | None,
    before: str | None,
    after: str | None,
    scope_query: str | None,
    around: str | None = None,
) -> ContextRequest:
    """The parameters, or a 400 naming the one that is wrong. ``scope_query``: the
    reader's scope as a query (tidegate.auth.scope.scoped_query), None for none."""
    line_id = parse_line_id(line)
    if line_id is None:
        raise BadRequest("line: must be a line's id (the `_id` of an exported line)")
    chosen = (around or "source").strip().lower()
    if chosen not in AROUND:
        raise BadRequest(f"around: must be one of {', '.join(AROUND)}")
    return ContextRequest(
        around=chosen,
        line_id=line_id,
        before=bounded_int(before, name="before", low=0, high=MAX_LINES, default=DEFAULT_LINES),
        after=bounded_int(after, name="after", low=0, high=MAX_LINES, default=DEFAULT_LINES),
        line_filter=parse_line_filter(hosts=None, apps=None, levels=None, query=scope_query),
    )


def context_of(
    *, reader: PageReader, account_id: str, request: ContextRequest
) -> dict[str, Any] | None:
    """``{"line", "before", "after", "more_before", "more_after"}`` (both sides oldest
    first), or None when the account has no such line the reader may see. The line and
    its neighbours are read from both tiers of the log store (docs/log-store.md,
    "Segments")."""
    return consistent(
        reader, account_id, lambda segments: _context(reader, account_id, request, segments)
    )


def _context(
    reader: PageReader, account_id: str, request: ContextRequest, segments: AccountSegments
) -> dict[str, Any] | None:
    line_filter = request.line_filter.bound_to(account_id)
    found = _anchor(reader, account_id, request.line_id, segments)
    if found is None:
        return None
    anchor, host_folded, app_folded = found
    meta = anchor.meta()
    if not line_filter.selects_everything and not row_matches(line_filter, anchor, meta):
        return None
    sql = translate(line_filter, dialect=reader.dialect)
    cold_sql = segment_filter(line_filter)
    exact = sql.exact and (cold_sql.exact or not segments.segments)
    same_source: list[Any] = []
    if request.around != "account":
        same_source.append(_lines.host == anchor.host)
    if request.around == "source":
        same_source.append(_lines.app.is_(None) if anchor.app is None else _lines.app == anchor.app)
    if cold_sql.where is not None:
        same_source.append(cold_sql.where)
    position = (anchor.ts, anchor.id)

    def side(count: int, *, newest_first: bool) -> tuple[list[dict[str, Any]], bool]:
        """Up to ``count`` lines on one side, nearest first, and whether there are more."""
        records: list[dict[str, Any]] = []
        if count == 0:
            return records, False
        walk: CandidateWalk | MergedWalk = CandidateWalk(
            reader=reader,
            scan=lambda after, limit: read_queries.neighbours(
                account_id=account_id,
                host=anchor.host,
                host_folded=host_folded,
                app=anchor.app,
                app_folded=app_folded,
                after=after or position,
                newest_first=newest_first,
                limit=limit,
                where=sql.where,
                around=request.around,
            ),
            budget=count + 1 if sql.exact else MAX_SCANNED_PER_SIDE,
            wanted=lambda: count + 1 - len(records),
        )
        if segments.segments:
            cold = segment_walk(
                segments,
                reader=reader,
                where=and_(true(), *same_source),
                from_ms=min(segment.min_ts for segment in segments.segments),
                to_ms=max(segment.max_ts for segment in segments.segments),
                max_id=MAX_LINE_ID,
                newest_first=newest_first,
                budget=count + 1 if cold_sql.exact else MAX_SCANNED_PER_SIDE,
                wanted=lambda: count + 1 - len(records),
            )
            walk = MergedWalk([walk, cold], newest_first=newest_first)
        for row, row_meta in _confirmed(walk.rows(position), line_filter, exact=exact):
            if len(records) == count:
                return records, True
            records.append(line_record(row, row_meta))
        # Past the scan's budget without an answer: there may be more.
        return records, not walk.exhausted

    before, more_before = side(request.before, newest_first=True)
    after, more_after = side(request.after, newest_first=False)
    before.reverse()
    return {
        "line": line_record(anchor, meta),
        "before": before,
        "after": after,
        "more_before": more_before,
        "more_after": more_after,
    }


def _anchor(
    reader: PageReader, account_id: str, line_id: int, segments: AccountSegments
) -> tuple[LineRow, str, str | None] | None:
    """The line (from either tier) and its folded host and app."""
    rows = reader.all(read_queries.source_of(account_id=account_id, line_id=line_id))
    if rows:
        host_folded, app_folded = rows[0]
        with closing(
            reader.rows(read_queries.line_by_id(account_id=account_id, line_id=line_id))
        ) as found:
            anchor = next(found, None)
        return None if anchor is None else (anchor, host_folded, app_folded)
    files = segments.holding(line_id)
    if not files:
        return None
    condition = duck_condition(segments.retained(_lines.id == line_id))
    with closing(
        reader.segment_rows(
            f"SELECT {', '.join(LINE_COLUMNS)}, host_folded, app_folded FROM {relation(files)} "
            f"WHERE {condition.sql}",
            condition.parameters,
        )
    ) as found_rows:
        row = next(found_rows, None)
    if row is None:
        return None
    return LineRow(*row[: len(LINE_COLUMNS)]), row[-2], row[-1]


def _confirmed(
    rows: Generator[LineRow, None, None], line_filter: LineFilter, *, exact: bool
) -> Generator[tuple[LineRow, dict[str, Any] | None], None, None]:
    """The rows of ``line_filter`` (each with its decoded meta)."""
    with closing(rows):
        for row in rows:
            meta = row.meta()
            if exact or row_matches(line_filter, row, meta):
                yield row, meta

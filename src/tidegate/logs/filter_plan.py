"""How a scan reads a filter's lines: the plan of a search over the row store, shared by
every reader of lines (export pages, aggregations). On SQLite, whose planner has no
statistics, it is tuned to the data (docs/search-syntax.md)."""

from __future__ import annotations

from dataclasses import dataclass

from tidegate.logs import read_queries
from tidegate.logs.filtering import LineFilter
from tidegate.logs.reading import PageReader
from tidegate.logs.segments import AccountSegments
from tidegate.logs.sql_filter import (
    Condition,
    FoldedPrefix,
    SqlFilter,
    folded_value_after,
    fts_candidates,
    fts_condition,
    translate,
)

# SQLite: a literal the FTS5 index finds in more rows than this (all accounts) is not
# looked up; the scan walks the time index and the matcher confirms instead: the
# subquery's row set, built on every page, would cost more than confirming the short
# walk that fills a page of a literal this common. (docs/search-syntax.md) Measured at
# 5,000,000 lines: counting to this many takes about 40 ms; a literal in 106,000 rows
# (2%) walked in 9.6 s looked up and 30.7 s confirmed (the former threshold, 100,000).
COMMON_FTS_ROWS = 400_000
# SQLite: a literal found in at most this many pages' worth of rows drives the scan: its
# rows are read by id and their keys sorted, on every page, for about what walking the
# time index costs to fill this many pages at the density of a literal that common.
DRIVE_PAGES = 10
# SQLite: a prefix of host/app/level covering more stored values than this stays a
# range (each value is one index seek to list).
MAX_FOLDED_VALUES = 32


def newest_id(reader: PageReader, account_id: str, segments: AccountSegments) -> int | None:
    """The largest id among the account's committed lines, in either tier."""
    hot = reader.scalar(read_queries.newest_line_id(account_id=account_id))
    ids = [int(value) for value in (hot, segments.max_id) if value is not None]
    return max(ids, default=None)


@dataclass(frozen=True, slots=True)
class FilterPlan:
    """How a scan reads a filter's lines (export pages and aggregations alike)."""

    sql: SqlFilter
    drive: Condition | None = None  # SQLite: the FTS5 lookup the scan starts from


def plan_filter(
    reader: PageReader, account_id: str, line_filter: LineFilter, size: int
) -> FilterPlan:
    """The filter's SQL form, tuned to the data on SQLite (whose planner has no
    statistics): FTS5 literals found in more than ``COMMON_FTS_ROWS`` rows are left to
    the matcher; the rarest remaining literal every line must contain drives the scan
    when its rows are few for the ``size`` lines wanted (a page; all of them for an
    aggregation); a prefix of host/app/level becomes the list of the stored values it
    covers (equality, which the folded indexes serve in time order).
    docs/search-syntax.md."""
    sql = translate(line_filter, dialect=reader.dialect)
    if reader.dialect != "sqlite":
        return FilterPlan(sql)
    found = {
        query: int(reader.scalar(fts_candidates(query, limit=COMMON_FTS_ROWS + 1)))
        for query in sql.fts_queries
    }
    common = [query for query, rows in found.items() if rows > COMMON_FTS_ROWS]
    values = {
        prefix: listed
        for prefix in sql.folded_prefixes
        if (listed := _folded_values(reader, account_id, prefix)) is not None
    }
    if common or values:
        sql = translate(line_filter, dialect=reader.dialect, drop_fts=common, folded_values=values)
    if not sql.driving_fts:
        return FilterPlan(sql)
    rarest = min(sql.driving_fts, key=found.__getitem__)
    if found[rarest] > DRIVE_PAGES * size:
        return FilterPlan(sql)  # the walk fills a page sooner than sorting all of them
    return FilterPlan(sql, drive=fts_condition(rarest))


def _folded_values(reader: PageReader, account_id: str, prefix: FoldedPrefix) -> list[str] | None:
    """Every stored value of the field starting with the prefix, or None past
    ``MAX_FOLDED_VALUES`` of them (the prefix then stays a range)."""
    values: list[str] = []
    after: str | None = None
    while len(values) <= MAX_FOLDED_VALUES:
        after = reader.scalar(folded_value_after(account_id=account_id, prefix=prefix, after=after))
        if after is None:
            return values
        values.append(after)
    return None

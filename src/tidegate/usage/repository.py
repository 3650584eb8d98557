"""Usage queries (queries only), run by a ``PageReader`` in an export worker thread
(tidegate.logs.reading): each reads the account's lines with ``from_ms <= ts <
to_ms``, in the row store through the index (account_id, ts, id), in the segments
with DuckDB (``segment_*``, for ``tidegate.logs.tiers.segment_query``).

Apps and hosts group by their folded column (so ``API`` and ``api`` are one app, named
by the smallest of its spellings); tags are the elements of each line's JSON list
(``json_each`` on SQLite, ``jsonb_array_elements_text`` on PostgreSQL, ``from_json``
in DuckDB). Names are compared in code point order in every engine (PostgreSQL's
``COLLATE "C"``, SQLite's and DuckDB's own), so that the two tiers' groups merge into
the answer the row store alone would give.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from sqlalchemy import ColumnElement, Select, bindparam, func, select

from tidegate.db.engine import Database, RawQuery
from tidegate.models import AccountUsage, LogLine
from tidegate.usage.schemas import Kind, Period

_FOLDED = {"apps": (LogLine.app, LogLine.app_folded), "hosts": (LogLine.host, LogLine.host_folded)}


def _in_period(
    account_id: str, period: Period, scope: ColumnElement[bool] | None
) -> list[ColumnElement[bool]]:
    """The account's lines in the period; only those of ``scope`` (a scoped member's
    group scope as an exact SQL condition, tidegate.usage.service) when given."""
    conditions = [
        LogLine.account_id == account_id,
        LogLine.ts >= period.from_ms,
        LogLine.ts < period.to_ms,
    ]
    return conditions if scope is None else [*conditions, scope]


def totals(
    *, account_id: str, period: Period, scope: ColumnElement[bool] | None = None
) -> Select[*tuple[Any, ...]]:
    """``(lines, bytes)`` of the account's lines in the period."""
    return select(func.count(), func.coalesce(func.sum(LogLine.size_bytes), 0)).where(
        *_in_period(account_id, period, scope)
    )


def _tag_values(dialect: str) -> Any:
    if dialect == "postgresql":
        return func.jsonb_array_elements_text(LogLine.tags).table_valued("value")
    return func.json_each(LogLine.tags).table_valued("value")


def _in_code_point_order(column: Any, dialect: str) -> Any:
    return column.collate("C") if dialect == "postgresql" else column


def top(
    *,
    kind: Kind,
    dialect: str,
    account_id: str,
    period: Period,
    limit: int | None,
    by_bytes: bool,
    name: str | None = None,
    scope: ColumnElement[bool] | None = None,
) -> Select[*tuple[Any, ...]]:
    """``(name, lines, bytes, key)`` of the ``limit`` apps, hosts or tags with the most
    lines (or bytes), most first, ties by name (``key``: the folded value grouped by, the
    tag itself); only ``name`` when given (case-insensitive for apps and hosts, exact for
    tags). ``limit`` None: every one of them, in no order."""
    lines = func.count()
    size = func.coalesce(func.sum(LogLine.size_bytes), 0)
    if kind == "tags":
        tag = _tag_values(dialect)
        value = tag.c.value
        statement = (
            select(value, lines, size, value)
            .select_from(LogLine)
            .join(tag, value.is_not(None))
            .where(*_in_period(account_id, period, scope), LogLine.tags.is_not(None))
            .group_by(value)
        )
        if name is not None:
            statement = statement.where(value == name)
        label: Any = _in_code_point_order(value, dialect)
    else:
        original, folded = _FOLDED[kind]
        label = func.min(_in_code_point_order(original, dialect))
        statement = (
            select(label, lines, size, folded)
            .where(*_in_period(account_id, period, scope), folded.is_not(None))
            .group_by(folded)
        )
        if name is not None:
            statement = statement.where(folded == name.casefold())
    if limit is None:
        return statement
    order = size if by_bytes else lines
    return statement.order_by(order.desc(), label.asc()).limit(limit)


def named(kind: Kind, name: str | None) -> ColumnElement[bool] | None:
    """The segments' lines of app, host or tag ``name`` (None: every line), as a
    condition for DuckDB (``tidegate.logs.segments.duck_condition``)."""
    if name is None:
        return None
    if kind == "tags":
        return func.list_contains(func.from_json(LogLine.tags, _TAG_LIST), name)
    return _FOLDED[kind][1] == name.casefold()


_TAG_LIST = '["VARCHAR"]'
# A segment query's rows (``segment_query``'s ``columns``) and the statement around
# them (``wrap``), by app, host or tag: ``(name, lines, bytes, key)`` as ``top``'s,
# ``{size}`` the files' expression of a line's size.
_BY_FOLDED = (
    "SELECT min(name), count(*), sum(size), key FROM ({}) WHERE key IS NOT NULL GROUP BY key"
)
_SEGMENT_GROUPS: dict[Kind, tuple[str, str]] = {
    "apps": ("app_folded AS key, app AS name, {size} AS size", _BY_FOLDED),
    "hosts": ("host_folded AS key, host AS name, {size} AS size", _BY_FOLDED),
    "tags": (
        "tags, {size} AS size",
        "SELECT value, count(*), sum(size), value FROM (SELECT unnest(from_json(tags, "
        f"'{_TAG_LIST}')) AS value, size FROM ({{}}) WHERE tags IS NOT NULL) "
        "WHERE value IS NOT NULL GROUP BY value",
    ),
}
# Every line of the segments (``segment_query``): ``(lines,)``.
SEGMENT_TOTAL = ("1", "SELECT count(*) FROM ({})")


def segment_groups(
    kind: Kind, *, size: str, top: tuple[int, bool] | None = None
) -> tuple[str, str]:
    """``columns`` and ``wrap`` of ``segment_query`` counting each app, host or tag's
    lines and bytes in segments: rows ``(name, lines, bytes, key)``. ``size``: the
    files' expression of a line's size (``tiers.by_line_size``). ``top`` (limit, by
    bytes): only the ``limit`` with the most lines (or bytes), most first, ties by name,
    as ``top``."""
    columns, wrap = _SEGMENT_GROUPS[kind]
    if top is not None:
        limit, by_bytes = top
        wrap += f" ORDER BY {3 if by_bytes else 2} DESC, 1 LIMIT {int(limit)}"
    return columns.replace("{size}", size), wrap


def stored_bytes(*, account_id: str, period: Period) -> Select[*tuple[Any, ...]]:
    """Bytes stored on the period's days (the usage table: every day, retained or not)."""
    return select(func.coalesce(func.sum(AccountUsage.bytes_stored), 0)).where(
        AccountUsage.account_id == account_id,
        AccountUsage.day >= period.first_day,
        AccountUsage.day <= period.last_day,
    )


# A day's counters, in the order the API shows them (``schemas.DayUsage``).
COUNTERS = ("lines_stored", "bytes_stored", "lines_excluded", "bytes_excluded", "lines_fallback")
_USAGE_BETWEEN = RawQuery(
    select(AccountUsage.day, *(getattr(AccountUsage, name) for name in COUNTERS))
    .where(
        AccountUsage.account_id == bindparam("account_id"),
        AccountUsage.day >= bindparam("first"),
        AccountUsage.day <= bindparam("last"),
    )
    .order_by(AccountUsage.day)
)


async def usage_records(*, db: Database, account_id: str, first: date, last: date) -> list[Any]:
    """The account's counters of the days from ``first`` to ``last`` that have any, as
    raw records, oldest first."""
    params = {"account_id": account_id, "first": first, "last": last}
    return await db.fetch_records(_USAGE_BETWEEN, params)

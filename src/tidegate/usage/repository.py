"""Usage queries (queries only), run by a ``PageReader`` in an export worker thread
(tidegate.logs.reading): each reads the account's lines with ``from_ms <= ts <
to_ms`` through the index (account_id, ts, id) and answers a bounded number of rows.

Apps and hosts group by their folded column (so ``API`` and ``api`` are one app, named
by the smallest of its spellings); tags are the elements of each line's JSON list
(``json_each`` on SQLite, ``jsonb_array_elements_text`` on PostgreSQL).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Select, func, select

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


def top(
    *,
    kind: Kind,
    dialect: str,
    account_id: str,
    period: Period,
    limit: int,
    by_bytes: bool,
    name: str | None = None,
    scope: ColumnElement[bool] | None = None,
) -> Select[*tuple[Any, ...]]:
    """``(name, lines, bytes)`` of the ``limit`` apps, hosts or tags with the most lines
    (or bytes), most first, ties by name; only ``name`` when given (case-insensitive for
    apps and hosts, exact for tags)."""
    lines = func.count()
    size = func.coalesce(func.sum(LogLine.size_bytes), 0)
    if kind == "tags":
        tag = _tag_values(dialect)
        value = tag.c.value
        statement = (
            select(value, lines, size)
            .select_from(LogLine)
            .join(tag, value.is_not(None))
            .where(*_in_period(account_id, period, scope), LogLine.tags.is_not(None))
            .group_by(value)
        )
        if name is not None:
            statement = statement.where(value == name)
        label: Any = value
    else:
        original, folded = _FOLDED[kind]
        label = func.min(original)
        statement = (
            select(label, lines, size)
            .where(*_in_period(account_id, period, scope), folded.is_not(None))
            .group_by(folded)
        )
        if name is not None:
            statement = statement.where(folded == name.casefold())
    order = size if by_bytes else lines
    return statement.order_by(order.desc(), label.asc()).limit(limit)


def stored_bytes(*, account_id: str, period: Period) -> Select[*tuple[Any, ...]]:
    """Bytes stored on the period's days (the usage table: every day, retained or not)."""
    return select(func.coalesce(func.sum(AccountUsage.bytes_stored), 0)).where(
        AccountUsage.account_id == account_id,
        AccountUsage.day >= period.first_day,
        AccountUsage.day <= period.last_day,
    )

"""Queries of the export: the high-water mark and keyset range scans.

Each is a Core statement run by a ``PageReader`` (tidegate.logs.reading): on SQLite
by the stdlib driver in the export's worker thread, on PostgreSQL by asyncpg on the
event loop. ``tags`` and ``meta`` are read as their JSON text, so that decoding them
(however large) happens in the worker thread, never in the driver on the loop.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any, NamedTuple

from sqlalchemy import (
    ColumnElement,
    Integer,
    Select,
    Text,
    cast,
    func,
    literal,
    literal_column,
    select,
    tuple_,
)

from tidegate import json_codec
from tidegate.models import Account, LogLine


class LineRow(NamedTuple):
    """A scanned line as the database returns it: ``tags`` and ``meta`` still JSON text."""

    id: int
    ts: int
    host: str
    app: str | None
    level: str | None
    env: str | None
    file: str | None
    ip: str | None
    mac: str | None
    tags_json: str | None
    meta_json: str | None
    line: str
    meta_unindexed_json: str | None = None
    # The record's JSON text as the database rendered it (``export_record``'s bytes) and
    # its ``export.service._weight``, when a walk asked for it and the database could be
    # sure of it (``segments.with_records``); the fields before ``id`` and ``ts`` are
    # then left out (None). None when the record is built in Python.
    record_json: str | None = None
    record_weight: int | None = None

    def tags(self) -> list[str] | None:
        value: list[str] | None = _decode(self.tags_json)
        return value

    def meta(self) -> dict[str, Any] | None:
        value: dict[str, Any] | None = _decode(self.meta_json)
        return value

    def meta_unindexed(self) -> dict[str, Any] | None:
        """The meta sent unindexed: shown, never matched."""
        value: dict[str, Any] | None = _decode(self.meta_unindexed_json)
        return value


# A row of the scan's columns (``_COLUMNS``, ``segments.LINE_COLUMNS``: every field, in
# order, the rendered record's two after them or not) as a ``LineRow``: ``tuple.__new__`` without the generated ``__new__``'s call and
# keyword handling, half the cost of ``LineRow(*row)`` per row.
as_line_row = typing.cast(Callable[[Iterable[Any]], LineRow], partial(tuple.__new__, LineRow))


def _decode(text: str | None) -> Any:
    # NaN and Infinity (which older SQLite rows may hold) read as null (json_codec).
    return None if text is None else json_codec.loads(text)


_COLUMNS = (
    LogLine.id,
    LogLine.ts,
    LogLine.host,
    LogLine.app,
    LogLine.level,
    LogLine.env,
    LogLine.file,
    LogLine.ip,
    LogLine.mac,
    cast(LogLine.tags, Text),
    cast(LogLine.meta, Text),
    LogLine.line,
    cast(LogLine.meta_unindexed, Text),
    # No rendered record: the row store's records are built in Python.
    literal_column("NULL", Text),
    literal_column("NULL", Integer),
)


def plan_of(*, account_id: str) -> Select[str]:
    """The account's plan type (the v1 export's line cap depends on it)."""
    return select(Account.plan_type).where(Account.id == account_id)


def received_after(
    *, account_id: str, after_id: int, since_ms: int, limit: int
) -> Select[*tuple[Any, ...]]:
    """Of the account's newest ``limit`` lines with an id past ``after_id``, those
    received at or after ``since_ms``, newest (largest id) first. Live tail's replay of
    what a stream missed (tidegate.tail.service). The newest are a range of the index
    (account_id, id) read from its end, never more than ``limit`` entries whatever the
    id given (a condition on ``received_ms`` there, which no index holds, would read on
    past every older line down to ``after_id``); ``received_ms`` then leaves out the
    older ones (on PostgreSQL, the older days' partitions too)."""
    newest = (
        select(LogLine.id)
        .where(LogLine.account_id == account_id, LogLine.id > after_id)
        .order_by(LogLine.id.desc())
        .limit(limit)
        .subquery()
    )
    # The smallest of them, found once (an uncorrelated subquery): the range's low end
    # (past ``after_id``; none when there is no line past it).
    lowest = select(func.min(newest.c.id)).scalar_subquery()
    return (
        select(*_COLUMNS)
        .where(
            LogLine.account_id == account_id,
            LogLine.id >= lowest,
            LogLine.received_ms >= since_ms,
        )
        .order_by(LogLine.id.desc())
    )


def newest_line_id(*, account_id: str) -> Select[int | None]:
    """The largest id among the account's committed lines (index (account_id, id))."""
    return select(func.max(LogLine.id)).where(LogLine.account_id == account_id)


def scan_lines(
    *,
    account_id: str,
    from_ms: int,
    to_ms: int,
    max_id: int,
    after: tuple[int, int] | None,
    newest_first: bool,
    limit: int,
    where: ColumnElement[bool] | None = None,
    drive: ColumnElement[bool] | None = None,
) -> Select[*tuple[Any, ...]]:
    """Up to ``limit`` lines with ``from_ms <= ts <= to_ms`` and ``id <= max_id`` in
    (ts, id) order (descending when ``newest_first``), strictly past ``after``, that
    satisfy ``where`` (a condition of tidegate.logs.sql_filter).

    The planner picks the index: a range of (account_id, ts, id) walked in order, or a
    folded column's index that ``where`` constrains. ``drive`` (SQLite): a condition
    ``id IN (FTS5 lookup)`` that ``where`` implies, whose few rows are fetched by id
    and sorted instead (see ``sql_filter.SqlFilter.driving_fts``).
    """
    order = (
        (LogLine.ts.desc(), LogLine.id.desc())
        if newest_first
        else (LogLine.ts.asc(), LogLine.id.asc())
    )
    conditions = [
        LogLine.account_id == account_id,
        LogLine.ts >= from_ms,
        LogLine.ts <= to_ms,
        # ``+ 0``: a filter, never an index. Given ``id <= ?`` SQLite's planner (no
        # statistics) walked the (account_id, id) index and sorted the whole account
        # rather than use the index the filter or the time range calls for.
        LogLine.id + 0 <= max_id,
    ]
    if where is not None:
        conditions.append(where)
    if after is not None:
        # Typed binds: an untyped int is bound as INTEGER on PostgreSQL, which ids past
        # 2**31 would overflow.
        bound = tuple_(literal(after[0], LogLine.ts.type), literal(after[1], LogLine.id.type))
        position = tuple_(LogLine.ts, LogLine.id)
        conditions.append(position < bound if newest_first else position > bound)
    if drive is None:
        return select(*_COLUMNS).where(*conditions).order_by(*order).limit(limit)
    # The account as an expression (``account_id || ''``) leaves SQLite no index led by
    # it, so the rows come by id from ``drive``; only their keys are sorted, then the
    # page's rows are read.
    conditions[0] = LogLine.account_id + "" == account_id
    keys = select(LogLine.id).where(drive, *conditions).order_by(*order).limit(limit)
    return select(*_COLUMNS).where(LogLine.id.in_(keys)).order_by(*order)


def line_by_id(*, account_id: str, line_id: int) -> Select[*tuple[Any, ...]]:
    """The account's line ``line_id`` (none for another account's: the primary key and
    the account together)."""
    return select(*_COLUMNS).where(LogLine.id == line_id, LogLine.account_id == account_id)


def source_of(*, account_id: str, line_id: int) -> Select[*tuple[Any, ...]]:
    """The folded host and app of the account's line ``line_id``: what ``neighbours``
    seeks by."""
    return select(LogLine.host_folded, LogLine.app_folded).where(
        LogLine.id == line_id, LogLine.account_id == account_id
    )


def neighbours(
    *,
    account_id: str,
    host: str,
    host_folded: str,
    app: str | None,
    app_folded: str | None,
    after: tuple[int, int],
    newest_first: bool,
    limit: int,
    where: ColumnElement[bool] | None = None,
    around: str = "source",
) -> Select[*tuple[Any, ...]]:
    """Up to ``limit`` lines of the account from the same host and app (exactly, case
    included; a line without an app goes with lines without one), strictly past
    ``after`` in (ts, id) order: before it newest first (``newest_first``), or after it
    oldest first. A range of ``(account_id, host_folded, ts, id)`` walked in order from
    ``after`` (or of the app's index), on both backends; ``where``: a condition of
    tidegate.logs.sql_filter (a group's scope). ``around``: ``source`` (the same host
    and app), ``host`` (the same host, any app) or ``account`` (every line of the
    account: the export's ``(account_id, ts, id)`` order)."""
    bound = tuple_(literal(after[0], LogLine.ts.type), literal(after[1], LogLine.id.type))
    position = tuple_(LogLine.ts, LogLine.id)
    conditions = [
        LogLine.account_id == account_id,
        position < bound if newest_first else position > bound,
    ]
    if around != "account":
        conditions += [LogLine.host_folded == host_folded, LogLine.host == host]
    if around == "source":
        if app is None:
            conditions.append(LogLine.app.is_(None))
        else:
            conditions += [LogLine.app_folded == app_folded, LogLine.app == app]
    if where is not None:
        conditions.append(where)
    order = (
        (LogLine.ts.desc(), LogLine.id.desc())
        if newest_first
        else (LogLine.ts.asc(), LogLine.id.asc())
    )
    return select(*_COLUMNS).where(*conditions).order_by(*order).limit(limit)

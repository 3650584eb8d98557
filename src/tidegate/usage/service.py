"""Usage in the platform's shapes. No HTTP here.

- v1 (``/v1/usage/{apps|hosts|tags}[/{name}]``): each app, host or tag's share of the
  account's lines in the period, in percent, from the log store.
- v2 (``/v2/usage``): bytes stored per account over whole UTC days, from the usage
  table (``account_usage``, counted by the writer in the insert's transaction; it
  outlives retention). ``/v2/usage/{apps|hosts|tags}[/{name}]``: bytes per app, host or
  tag, from the log store.

Per-app/host/tag figures are computed from the stored lines, not recorded: no table
grows with the number of distinct hosts a tenant invents, and exclusion rules, retention
and deletions are reflected as they are. The stored lines are both tiers of the log
store (docs/log-store.md, "Usage from segments"): the row store's lines of the period
are read once through the (account_id, ts) index and the database aggregates; the
segments' (lines the compactor moved) are counted by DuckDB, in one consistent view of
the two (``tidegate.logs.tiers.consistent``), and the groups of both summed. The answer
holds at most ``limit`` rows (at most 1,000; default 50, the platform dashboard's top
50). All of it runs in an export worker thread, never on the event loop. Lines past
retention are gone (or, in a segment not yet dropped, left out), so these cover the
retained lines only.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.auth.scope import AccessScope
from tidegate.db.engine import Database
from tidegate.errors import Forbidden, ValidationFailed
from tidegate.logs.filtering import parse_line_filter
from tidegate.logs.reading import PageReader, run_off_loop
from tidegate.logs.segments import AccountSegments
from tidegate.logs.sql_filter import translate
from tidegate.logs.tiers import by_line_size, consistent, segment_query
from tidegate.usage import repository, schemas
from tidegate.usage.schemas import Kind, Period


@dataclass(frozen=True, slots=True)
class UsageScope:
    """Whose lines, and how to read them (off the loop, tidegate.logs.reading)."""

    database: Database
    session: AsyncSession
    account_id: str
    # A scoped member's group scope (tidegate.auth.scope); None: every line.
    access: AccessScope | None = None

    def condition(self, dialect: str) -> ColumnElement[bool] | None:
        """The access scope as an exact SQL condition over ``log_lines``. A scope the
        database cannot apply exactly (one the Python matcher would have to confirm
        line by line) is refused rather than approximated: an approximation is a
        superset, which would count lines outside the scope."""
        if self.access is None:
            return None
        line_filter = parse_line_filter(
            hosts=None,
            apps=None,
            levels=None,
            query=self.access.as_query(),
            account_id=self.account_id,
        )
        sql = translate(line_filter, dialect=dialect)
        if not sql.exact or sql.where is None:
            raise Forbidden(
                "Usage by app, host or tag is not available with your groups' access "
                "scope (its query cannot be counted exactly); ask an admin"
            )
        return sql.where


@dataclass(frozen=True, slots=True)
class Counted:
    name: str
    lines: int
    bytes: int


async def _counted(
    *,
    scope: UsageScope,
    kind: Kind,
    period: Period,
    limit: int,
    by_bytes: bool,
    name: str | None = None,
) -> tuple[int, list[Counted]]:
    """The account's lines in the period, and the ``limit`` apps, hosts or tags with the
    most lines (or bytes), in a worker thread, from both tiers of the log store."""

    def work(reader: PageReader) -> tuple[int, list[Counted]]:
        return consistent(
            reader,
            scope.account_id,
            lambda segments: _count(
                reader,
                segments,
                scope=scope,
                kind=kind,
                period=period,
                limit=limit,
                by_bytes=by_bytes,
                name=name,
            ),
        )

    return await run_off_loop(
        database=scope.database, session=scope.session, account_id=scope.account_id, page=work
    )


def _count(
    reader: PageReader,
    segments: AccountSegments,
    *,
    scope: UsageScope,
    kind: Kind,
    period: Period,
    limit: int,
    by_bytes: bool,
    name: str | None,
) -> tuple[int, list[Counted]]:
    """``_counted``'s answer from one consistent view of the tiers. Without segments in
    the period the database ranks and limits; with them every group of both tiers is
    counted and the sums ranked here (the top of a sum is not the sum of tops), in the
    order the database ranks in (``repository.top``)."""
    limit_to = scope.condition(reader.dialect)
    ((total, _),) = reader.all(
        repository.totals(account_id=scope.account_id, period=period, scope=limit_to)
    )
    # ts is within [from_ms, to_ms - 1] in both tiers; every line of every segment.
    last_ms, max_id = period.to_ms - 1, segments.max_id or 0
    files = segments.files(from_ms=period.from_ms, to_ms=last_ms, max_id=max_id)
    rows = reader.all(
        repository.top(
            kind=kind,
            dialect=reader.dialect,
            account_id=scope.account_id,
            period=period,
            limit=None if files else limit,
            by_bytes=by_bytes,
            name=name,
            scope=limit_to,
        )
    )
    groups = [(str(label), int(lines), int(size), str(key)) for label, lines, size, key in rows]
    if not files:
        return int(total), [Counted(label, lines, size) for label, lines, size, _ in groups]
    cold = _Segments(reader, files, first_ms=period.from_ms, last_ms=last_ms, max_id=max_id)
    in_scope = segments.retained(scope.condition("duckdb"))
    total += cold.total(in_scope)
    # No group in the row store (a period wholly in segments): DuckDB ranks and limits.
    ranked = not groups and name is None
    groups += cold.groups(kind, in_scope, name=name, top=(limit, by_bytes) if ranked else None)
    return int(total), _ranked(groups, by_bytes=by_bytes, limit=limit)


@dataclass(frozen=True, slots=True)
class _Segments:
    """The segments' part of a usage read (DuckDB): ``files`` from ``segments.files``,
    lines of ``first_ms <= ts <= last_ms``."""

    reader: PageReader
    files: list[str]
    first_ms: int
    last_ms: int
    max_id: int

    def _rows(
        self, files: list[str], where: ColumnElement[bool] | None, statement: tuple[str, str]
    ) -> Iterator[tuple[Any, ...]]:
        columns, wrap = statement
        return segment_query(
            self.reader,
            files,
            columns=columns,
            where=where,
            from_ms=self.first_ms,
            to_ms=self.last_ms,
            max_id=self.max_id,
            wrap=wrap,
        )

    def total(self, where: ColumnElement[bool] | None) -> int:
        """The lines of ``where`` (the access scope, retention)."""
        return sum(
            int(lines) for (lines,) in self._rows(self.files, where, repository.SEGMENT_TOTAL)
        )

    def groups(
        self,
        kind: Kind,
        where: ColumnElement[bool] | None,
        *,
        name: str | None,
        top: tuple[int, bool] | None = None,
    ) -> list[tuple[str, int, int, str]]:
        """``(name, lines, bytes, key)`` of each app, host or tag of ``where``'s lines,
        only ``name`` when given, as ``repository.top``'s; ``top`` (limit, by bytes):
        those the answer can hold only."""
        where = _all_of(where, repository.named(kind, name))
        parts = by_line_size(self.reader, self.files)
        if len(parts) > 1:
            top = None  # the files' groups are summed here: each part's every one
        found: list[tuple[str, int, int, str]] = []
        for files, size in parts:
            statement = repository.segment_groups(kind, size=size, top=top)
            found += [
                (str(label), int(lines), int(total), str(key))
                for label, lines, total, key in self._rows(files, where, statement)
            ]
        if name is not None and kind == "tags":
            # The lines with the tag were read, each counted under every tag it has.
            found = [group for group in found if group[3] == name]
        return found


def _all_of(*conditions: ColumnElement[bool] | None) -> ColumnElement[bool] | None:
    present = [condition for condition in conditions if condition is not None]
    return and_(*present) if present else None


def _ranked(
    groups: list[tuple[str, int, int, str]], *, by_bytes: bool, limit: int
) -> list[Counted]:
    """Groups ``(name, lines, bytes, key)`` of the same key summed (named by the smallest
    name), the ``limit`` with the most lines (or bytes) first, ties by name."""
    merged: dict[str, Counted] = {}
    for label, lines, size, key in groups:
        seen = merged.get(key)
        if seen is not None:
            label = min(label, seen.name)
            lines += seen.lines
            size += seen.bytes
        merged[key] = Counted(label, lines, size)
    ordered = sorted(
        merged.values(), key=lambda item: (-(item.bytes if by_bytes else item.lines), item.name)
    )
    return ordered[:limit]


def _share(total: int, item: Counted) -> schemas.ShareOfLines:
    percentage = round(100.0 * item.lines / total, 4) if total else 0.0
    return schemas.ShareOfLines(name=item.name, percentage=percentage, lines=item.lines)


async def shares(
    *, scope: UsageScope, kind: Kind, period: Period, limit: int
) -> list[schemas.ShareOfLines]:
    total, found = await _counted(
        scope=scope, kind=kind, period=period, limit=limit, by_bytes=False
    )
    return [_share(total, item) for item in found]


async def share_of(
    *, scope: UsageScope, kind: Kind, period: Period, name: str
) -> schemas.ShareOfLines:
    """One app, host or tag; none of its lines in the period is a share of 0."""
    total, found = await _counted(
        scope=scope, kind=kind, period=period, limit=1, by_bytes=False, name=name
    )
    return _share(total, found[0] if found else Counted(name, 0, 0))


def _window(period: Period) -> dict[str, str]:
    # As the platform answers: the calculated bounds, both exclusive.
    return {"from": schemas.rfc3339(period.from_ms - 1), "to": schemas.rfc3339(period.to_ms)}


async def account_bytes(*, scope: UsageScope, period: Period) -> schemas.AccountUsageV2:
    def work(reader: PageReader) -> int:
        return int(
            reader.scalar(repository.stored_bytes(account_id=scope.account_id, period=period))
        )

    stored = await run_off_loop(
        database=scope.database, session=scope.session, account_id=scope.account_id, page=work
    )
    results = schemas.AccountBytes(plan_bytes=stored, restored_bytes=0)
    return schemas.AccountUsageV2.model_validate({**_window(period), "results": results})


def _bytes(item: Counted) -> schemas.BytesOf:
    return schemas.BytesOf(name=item.name, total_bytes=item.bytes)


async def kind_bytes(
    *, scope: UsageScope, kind: Kind, period: Period, limit: int
) -> schemas.KindUsageV2:
    _, found = await _counted(scope=scope, kind=kind, period=period, limit=limit, by_bytes=True)
    results = [_bytes(item) for item in found]
    return schemas.KindUsageV2.model_validate({**_window(period), "results": results})


async def name_bytes(
    *, scope: UsageScope, kind: Kind, period: Period, name: str
) -> schemas.NameUsageV2:
    _, found = await _counted(
        scope=scope, kind=kind, period=period, limit=1, by_bytes=True, name=name
    )
    results = _bytes(found[0] if found else Counted(name, 0, 0))
    return schemas.NameUsageV2.model_validate({**_window(period), "results": results})


# GET /v1/usage: the counters per UTC day.
MAX_USAGE_DAYS = 366


def report_days(first: date | None, last: date | None, today: date) -> tuple[date, date]:
    """The report's first and last day: by default the 30 days to today; at most
    MAX_USAGE_DAYS, ``first`` not after ``last`` (a 400 otherwise)."""
    last = last or today
    if first is None:
        first = last - timedelta(days=29) if last.toordinal() > 29 else date.min
    if first > last:
        raise ValidationFailed("from must not be after to", context="querystring")
    if (last - first).days >= MAX_USAGE_DAYS:
        raise ValidationFailed(f"At most {MAX_USAGE_DAYS} days per request", context="querystring")
    return first, last


async def read_usage_report(
    *, db: Database, account_id: str, first: date | None, last: date | None, today: date
) -> dict[str, Any]:
    """Every day of the range (days with nothing are zeros) and the totals, as
    ``schemas.Usage`` writes them (``from`` by its alias), from one raw read."""
    first, last = report_days(first, last, today)
    kept = {
        str(row.day): row
        for row in await repository.usage_records(
            db=db, account_id=account_id, first=first, last=last
        )
    }
    days = []
    totals = dict.fromkeys(repository.COUNTERS, 0)
    for offset in range((last - first).days + 1):
        day = (first + timedelta(days=offset)).isoformat()
        row = kept.get(day)
        counted = {name: getattr(row, name) if row else 0 for name in repository.COUNTERS}
        for name, value in counted.items():
            totals[name] += value
        days.append({"day": day, **counted})
    return {"from": first.isoformat(), "to": last.isoformat(), "days": days, "totals": totals}

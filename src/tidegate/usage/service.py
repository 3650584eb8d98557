"""Usage in the platform's shapes. No HTTP here.

- v1 (``/v1/usage/{apps|hosts|tags}[/{name}]``): each app, host or tag's share of the
  account's lines in the period, in percent, from the log store.
- v2 (``/v2/usage``): bytes stored per account over whole UTC days, from the usage
  table (``account_usage``, counted by the writer in the insert's transaction; it
  outlives retention). ``/v2/usage/{apps|hosts|tags}[/{name}]``: bytes per app, host or
  tag, from the log store.

Per-app/host/tag figures are computed from the stored lines, not recorded: no table
grows with the number of distinct hosts a tenant invents, and exclusion rules, retention
and deletions are reflected as they are. Each query reads the period's lines once
through the (account_id, ts) index and the database aggregates; the answer holds at most
``limit`` rows (at most 1,000; default 50, the platform dashboard's top 50). All of it
runs in an export worker thread, never on the event loop. Lines past retention are
gone, so these cover the retained lines only.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import ColumnElement
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.auth.scope import AccessScope
from tidegate.db.engine import Database
from tidegate.errors import Forbidden
from tidegate.logs.filtering import parse_line_filter
from tidegate.logs.reading import PageReader, run_off_loop
from tidegate.logs.sql_filter import translate
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
    most lines (or bytes), in a worker thread."""

    def work(reader: PageReader) -> tuple[int, list[Counted]]:
        limit_to = scope.condition(reader.dialect)
        ((total, _),) = reader.all(
            repository.totals(account_id=scope.account_id, period=period, scope=limit_to)
        )
        rows = reader.all(
            repository.top(
                kind=kind,
                dialect=reader.dialect,
                account_id=scope.account_id,
                period=period,
                limit=limit,
                by_bytes=by_bytes,
                name=name,
                scope=limit_to,
            )
        )
        return int(total), [
            Counted(str(value), int(lines), int(size)) for value, lines, size in rows
        ]

    return await run_off_loop(
        database=scope.database, session=scope.session, account_id=scope.account_id, page=work
    )


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

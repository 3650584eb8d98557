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

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.export.reading import PageReader, run_off_loop
from tidegate.usage import repository, schemas
from tidegate.usage.schemas import Kind, Period


def _percent(lines: int, total: int) -> float:
    return round(100.0 * lines / total, 4) if total else 0.0


async def _off_loop(*, database_url: str, session: AsyncSession, work: Any) -> Any:
    return await run_off_loop(database_url=database_url, session=session, page=work)


async def shares(
    *,
    database_url: str,
    session: AsyncSession,
    account_id: str,
    kind: Kind,
    period: Period,
    limit: int,
    name: str | None = None,
) -> list[schemas.ShareOfLines]:
    def work(reader: PageReader) -> list[schemas.ShareOfLines]:
        ((total, _),) = reader.all(repository.totals(account_id=account_id, period=period))
        rows = reader.all(
            repository.top(
                kind=kind,
                dialect=reader.dialect,
                account_id=account_id,
                period=period,
                limit=limit,
                by_bytes=False,
                name=name,
            )
        )
        return [
            schemas.ShareOfLines(
                name=str(value), percentage=_percent(int(lines), int(total)), lines=int(lines)
            )
            for value, lines, _ in rows
        ]

    result: list[schemas.ShareOfLines] = await _off_loop(
        database_url=database_url, session=session, work=work
    )
    return result


async def share_of(
    *,
    database_url: str,
    session: AsyncSession,
    account_id: str,
    kind: Kind,
    period: Period,
    name: str,
) -> schemas.ShareOfLines:
    """One app, host or tag; none of its lines in the period is a share of 0."""
    found = await shares(
        database_url=database_url,
        session=session,
        account_id=account_id,
        kind=kind,
        period=period,
        limit=1,
        name=name,
    )
    return found[0] if found else schemas.ShareOfLines(name=name, percentage=0.0, lines=0)


def _window(period: Period) -> dict[str, str]:
    # As the platform answers: the calculated bounds, both exclusive.
    return {"from": schemas.rfc3339(period.from_ms - 1), "to": schemas.rfc3339(period.to_ms)}


async def account_bytes(
    *, database_url: str, session: AsyncSession, account_id: str, period: Period
) -> schemas.AccountUsageV2:
    def work(reader: PageReader) -> int:
        return int(reader.scalar(repository.stored_bytes(account_id=account_id, period=period)))

    stored: int = await _off_loop(database_url=database_url, session=session, work=work)
    return schemas.AccountUsageV2.model_validate(
        {
            **_window(period),
            "results": schemas.AccountBytes(plan_bytes=stored, restored_bytes=0),
        }
    )


async def bytes_by(
    *,
    database_url: str,
    session: AsyncSession,
    account_id: str,
    kind: Kind,
    period: Period,
    limit: int,
    name: str | None = None,
) -> list[schemas.BytesOf]:
    def work(reader: PageReader) -> list[schemas.BytesOf]:
        rows = reader.all(
            repository.top(
                kind=kind,
                dialect=reader.dialect,
                account_id=account_id,
                period=period,
                limit=limit,
                by_bytes=True,
                name=name,
            )
        )
        return [schemas.BytesOf(name=str(value), total_bytes=int(size)) for value, _, size in rows]

    result: list[schemas.BytesOf] = await _off_loop(
        database_url=database_url, session=session, work=work
    )
    return result


async def kind_bytes(
    *,
    database_url: str,
    session: AsyncSession,
    account_id: str,
    kind: Kind,
    period: Period,
    limit: int,
) -> schemas.KindUsageV2:
    found = await bytes_by(
        database_url=database_url,
        session=session,
        account_id=account_id,
        kind=kind,
        period=period,
        limit=limit,
    )
    return schemas.KindUsageV2.model_validate({**_window(period), "results": found})


async def name_bytes(
    *,
    database_url: str,
    session: AsyncSession,
    account_id: str,
    kind: Kind,
    period: Period,
    name: str,
) -> schemas.NameUsageV2:
    found = await bytes_by(
        database_url=database_url,
        session=session,
        account_id=account_id,
        kind=kind,
        period=period,
        limit=1,
        name=name,
    )
    result = found[0] if found else schemas.BytesOf(name=name, total_bytes=0)
    return schemas.NameUsageV2.model_validate({**_window(period), "results": result})

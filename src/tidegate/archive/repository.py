"""Queries of archiving: the accounts' configurations and their days."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import bindparam, delete, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.db.conflicts import insert_for
from tidegate.db.engine import Database, RawQuery
from tidegate.models import ArchiveConfig, ArchiveDay

__all__ = [
    "accounts_without_day",
    "attempts_of",
    "claim",
    "config_record",
    "day_records",
    "days_of",
    "due_days",
    "ensure_day",
    "finish",
    "get_config",
    "integration_record",
    "remove_config",
    "renew",
    "request_day",
]


async def get_config(*, session: AsyncSession, account_id: str) -> ArchiveConfig | None:
    return await session.get(ArchiveConfig, account_id, populate_existing=True)


# The account's sealed configuration (the archiving GET).
_CONFIG = RawQuery(
    select(ArchiveConfig.sealed).where(ArchiveConfig.account_id == bindparam("account_id"))
)


async def config_record(*, db: Database, account_id: str) -> Any:
    """The account's configuration as a raw record (``sealed``), or None."""
    rows = await db.fetch_records(_CONFIG, {"account_id": account_id})
    return rows[0] if rows else None


# The account's integration (the archiving status).
_INTEGRATION = RawQuery(
    select(ArchiveConfig.integration).where(ArchiveConfig.account_id == bindparam("account_id"))
)


async def integration_record(*, db: Database, account_id: str) -> Any:
    """The account's configuration as a raw record (``integration``), or None."""
    rows = await db.fetch_records(_INTEGRATION, {"account_id": account_id})
    return rows[0] if rows else None


async def remove_config(*, session: AsyncSession, account_id: str) -> bool:
    result = await session.execute(
        delete(ArchiveConfig).where(ArchiveConfig.account_id == account_id)
    )
    return bool(getattr(result, "rowcount", 0))


async def accounts_without_day(*, session: AsyncSession, day: int) -> Sequence[str]:
    """The accounts with archiving whose ``day`` has no row yet: a round writes only
    when a day begins, not once per account on every tick."""
    scheduled = select(ArchiveDay.account_id).where(
        ArchiveDay.account_id == ArchiveConfig.account_id, ArchiveDay.day == day
    )
    rows = await session.scalars(select(ArchiveConfig.account_id).where(~scheduled.exists()))
    return list(rows)


async def ensure_day(
    *, session: AsyncSession, account_id: str, day: int, due_ms: int, now_ms: int
) -> bool:
    """The day's row, made pending when it does not exist yet (INSERT ... ON CONFLICT
    DO NOTHING: two workers may try at once); True when this call made it."""
    result = await session.execute(
        insert_for(session, ArchiveDay)
        .values(
            account_id=account_id,
            day=day,
            status="pending",
            attempts=0,
            next_attempt_ms=due_ms,
            lease_until_ms=0,
            lines=0,
            bytes=0,
            updated_ms=now_ms,
        )
        .on_conflict_do_nothing(index_elements=["account_id", "day"])
    )
    return bool(getattr(result, "rowcount", 0) == 1)


async def request_day(*, session: AsyncSession, account_id: str, day: int, now_ms: int) -> None:
    """Write the day now (again): pending, due now, attempts and error cleared."""
    if not await ensure_day(
        session=session, account_id=account_id, day=day, due_ms=now_ms, now_ms=now_ms
    ):
        await session.execute(
            update(ArchiveDay)
            .where(ArchiveDay.account_id == account_id, ArchiveDay.day == day)
            .values(
                status="pending", attempts=0, next_attempt_ms=now_ms, error=None, updated_ms=now_ms
            )
        )


async def due_days(*, session: AsyncSession, now_ms: int, limit: int) -> list[tuple[str, int]]:
    rows = await session.execute(
        select(ArchiveDay.account_id, ArchiveDay.day)
        .where(
            ArchiveDay.status.in_(("pending", "retrying")),
            ArchiveDay.next_attempt_ms <= now_ms,
            ArchiveDay.lease_until_ms < now_ms,
        )
        .order_by(ArchiveDay.next_attempt_ms)
        .limit(limit)
    )
    return [(account_id, day) for account_id, day in rows]


async def claim(
    *, session: AsyncSession, account_id: str, day: int, owner: str, now_ms: int, lease_ms: int
) -> bool:
    """Take the day's lease (and count the attempt); False when another worker holds it
    or the day is no longer due."""
    result = await session.execute(
        update(ArchiveDay)
        .where(
            ArchiveDay.account_id == account_id,
            ArchiveDay.day == day,
            ArchiveDay.status.in_(("pending", "retrying")),
            ArchiveDay.next_attempt_ms <= now_ms,
            or_(ArchiveDay.lease_owner.is_(None), ArchiveDay.lease_until_ms < now_ms),
        )
        .values(
            lease_owner=owner,
            lease_until_ms=now_ms + lease_ms,
            attempts=ArchiveDay.attempts + 1,
            updated_ms=now_ms,
        )
    )
    return bool(getattr(result, "rowcount", 0) == 1)


async def attempts_of(*, session: AsyncSession, account_id: str, day: int) -> int:
    value = await session.scalar(
        select(ArchiveDay.attempts).where(
            ArchiveDay.account_id == account_id, ArchiveDay.day == day
        )
    )
    return int(value or 0)


async def renew(
    *, session: AsyncSession, account_id: str, day: int, owner: str, until_ms: int
) -> bool:
    result = await session.execute(
        update(ArchiveDay)
        .where(
            ArchiveDay.account_id == account_id,
            ArchiveDay.day == day,
            ArchiveDay.lease_owner == owner,
        )
        .values(lease_until_ms=until_ms)
    )
    return bool(getattr(result, "rowcount", 0) == 1)


async def finish(
    *, session: AsyncSession, account_id: str, day: int, owner: str, **values: object
) -> None:
    """Record the attempt's outcome and give the lease back."""
    await session.execute(
        update(ArchiveDay)
        .where(
            ArchiveDay.account_id == account_id,
            ArchiveDay.day == day,
            ArchiveDay.lease_owner == owner,
        )
        .values(lease_owner=None, lease_until_ms=0, **values)
    )


# The account's latest days, newest first (``days_of``'s, as raw records).
_DAYS_OF = RawQuery(
    select(ArchiveDay)
    .where(ArchiveDay.account_id == bindparam("account_id"))
    .order_by(ArchiveDay.day.desc())
    .limit(bindparam("limit"))
)


async def day_records(*, db: Database, account_id: str, limit: int) -> list[Any]:
    return await db.fetch_records(_DAYS_OF, {"account_id": account_id, "limit": limit})


async def days_of(*, session: AsyncSession, account_id: str, limit: int) -> Sequence[ArchiveDay]:
    rows = await session.scalars(
        select(ArchiveDay)
        .where(ArchiveDay.account_id == account_id)
        .order_by(ArchiveDay.day.desc())
        .limit(limit)
    )
    return list(rows)

"""Queries of the writer of lines (queries only): an account's exclusion rules and their
fingerprint. The ingestion credential lookup reads the same fingerprint in its own query
(``ingest.repository``), so both give the driver's values and compare equal in the
rule cache."""

from __future__ import annotations

from sqlalchemy import bindparam, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.db.engine import Database, RawQuery
from tidegate.models import ExclusionRule

_rules = ExclusionRule.__table__

_ACCOUNT_RULES_FINGERPRINT = RawQuery(
    select(func.count(), func.max(_rules.c.updated_at)).where(
        _rules.c.account_id == bindparam("account_id")
    )
)


async def rules_fingerprint(*, db: Database, account_id: str) -> tuple[int, object]:
    """The count and latest ``updated_at`` of an account's exclusion rules."""
    ((count, updated),) = await db.fetch(_ACCOUNT_RULES_FINGERPRINT, {"account_id": account_id})
    return int(count), updated


async def active_rules(*, session: AsyncSession, account_id: str) -> list[ExclusionRule]:
    result = await session.execute(
        select(ExclusionRule).where(
            ExclusionRule.account_id == account_id, ExclusionRule.active.is_(True)
        )
    )
    return list(result.scalars())

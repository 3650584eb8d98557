"""Exclusion rule queries. Lookups for a change lock the row (see keys.repository)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.models import ExclusionRule


async def rules_of(*, session: AsyncSession, account_id: str) -> list[ExclusionRule]:
    result = await session.execute(
        select(ExclusionRule)
        .where(ExclusionRule.account_id == account_id)
        .order_by(ExclusionRule.created_at, ExclusionRule.id)
    )
    return list(result.scalars())


async def rule_of(
    *, session: AsyncSession, account_id: str, rule_id: str, for_update: bool = False
) -> ExclusionRule | None:
    query = select(ExclusionRule).where(
        ExclusionRule.id == rule_id, ExclusionRule.account_id == account_id
    )
    if for_update:
        query = query.with_for_update()
    return (await session.execute(query)).scalar_one_or_none()

"""Exclusion rule queries. Lookups for a change lock the row (see keys.repository)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.db.engine import Database, RawQuery, account_rows
from tidegate.models import ExclusionRule

# What a rule's representation (service.rule_schema) is built from.
_COLUMNS = ("id", "title", "hosts", "apps", "query", "active", "indexonly")
_RULES_OF = account_rows(ExclusionRule, *_COLUMNS)
_RULE_OF = RawQuery(
    select(*(ExclusionRule.__table__.c[name] for name in _COLUMNS)).where(
        ExclusionRule.id == bindparam("rule_id"),
        ExclusionRule.account_id == bindparam("account_id"),
    )
)


async def rules_of(*, db: Database, account_id: str) -> list[Any]:
    """The account's rules, oldest first, as raw records (Database.fetch_records)."""
    return await db.fetch_records(_RULES_OF, {"account_id": account_id})


async def raw_rule_of(*, db: Database, account_id: str, rule_id: str) -> Any:
    rows = await db.fetch_records(_RULE_OF, {"account_id": account_id, "rule_id": rule_id})
    return rows[0] if rows else None


async def rule_of(
    *, session: AsyncSession, account_id: str, rule_id: str, for_update: bool = False
) -> ExclusionRule | None:
    query = select(ExclusionRule).where(
        ExclusionRule.id == rule_id, ExclusionRule.account_id == account_id
    )
    if for_update:
        query = query.with_for_update()
    return (await session.execute(query)).scalar_one_or_none()

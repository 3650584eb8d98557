"""Queries of the writer of lines (queries only): an account's exclusion rules and
parsing templates and their fingerprint. The ingestion credential lookup reads the same fingerprint in its own query
(``ingest.repository``), so both give the driver's values and compare equal in the
rule cache."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.db.engine import Database, RawQuery
from tidegate.models import ExclusionRule, ParsingTemplate

_rules = ExclusionRule.__table__
_templates = ParsingTemplate.__table__


def changes_of(table: Any, account_id: Any) -> tuple[Any, Any]:
    """Scalar subqueries: the count and latest ``updated_at`` of ``table``'s rows of
    ``account_id`` (a column or a parameter). Every change (a delete too) moves one."""
    where = table.c.account_id == account_id
    return (
        select(func.count()).where(where).scalar_subquery(),
        select(func.max(table.c.updated_at)).where(where).scalar_subquery(),
    )


_ACCOUNT_RULES_FINGERPRINT = RawQuery(
    select(
        *changes_of(_rules, bindparam("account_id")),
        *changes_of(_templates, bindparam("account_id")),
    )
)


async def rules_fingerprint(*, db: Database, account_id: str) -> tuple[int, object, int, object]:
    """The count and latest ``updated_at`` of an account's exclusion rules, then the same
    of its parsing templates."""
    ((count, updated, templates, templates_updated),) = await db.fetch(
        _ACCOUNT_RULES_FINGERPRINT, {"account_id": account_id}
    )
    return int(count), updated, int(templates), templates_updated


async def active_rules(*, session: AsyncSession, account_id: str) -> list[ExclusionRule]:
    result = await session.execute(
        select(ExclusionRule).where(
            ExclusionRule.account_id == account_id, ExclusionRule.active.is_(True)
        )
    )
    return list(result.scalars())


async def active_templates(*, session: AsyncSession, account_id: str) -> list[ParsingTemplate]:
    result = await session.execute(
        select(ParsingTemplate)
        .where(ParsingTemplate.account_id == account_id, ParsingTemplate.state == "active")
        .order_by(ParsingTemplate.position, ParsingTemplate.created_at, ParsingTemplate.id)
    )
    return list(result.scalars())

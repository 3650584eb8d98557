"""Parsing template queries (queries only). Lookups for a change lock the row."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.db.engine import Database, RawQuery
from tidegate.models import Account, ParsingTemplate

# The account's templates in the order they are tried (the list), and one by id: the
# columns ``service.template_data`` reads.
_TEMPLATES = select(
    *(
        ParsingTemplate.__table__.c[name]
        for name in (
            "id", "name", "pattern", "state", "position", "activated_at", "match_count",
            "last_matched_ms", "created_at", "updated_at",
        )
    )
).where(ParsingTemplate.account_id == bindparam("account_id"))  # fmt: skip
_TEMPLATES_OF = RawQuery(
    _TEMPLATES.order_by(ParsingTemplate.position, ParsingTemplate.created_at, ParsingTemplate.id)
)
_TEMPLATE_OF = RawQuery(_TEMPLATES.where(ParsingTemplate.id == bindparam("id")))


async def template_records(*, db: Database, account_id: str) -> list[Any]:
    """The account's templates in the order they are tried, as raw records."""
    return await db.fetch_records(_TEMPLATES_OF, {"account_id": account_id})


async def template_record(*, db: Database, account_id: str, template_id: str) -> Any:
    """The account's template ``template_id`` as a raw record, or None."""
    rows = await db.fetch_records(_TEMPLATE_OF, {"account_id": account_id, "id": template_id})
    return rows[0] if rows else None


async def templates_of(
    *, session: AsyncSession, account_id: str, for_update: bool = False
) -> list[ParsingTemplate]:
    query = (
        select(ParsingTemplate)
        .where(ParsingTemplate.account_id == account_id)
        .order_by(ParsingTemplate.position, ParsingTemplate.created_at, ParsingTemplate.id)
    )
    if for_update:
        query = query.with_for_update()
    return list((await session.execute(query)).scalars())


async def template_of(
    *, session: AsyncSession, account_id: str, template_id: str, for_update: bool = False
) -> ParsingTemplate | None:
    query = select(ParsingTemplate).where(
        ParsingTemplate.id == template_id, ParsingTemplate.account_id == account_id
    )
    if for_update:
        query = query.with_for_update()
    return (await session.execute(query)).scalar_one_or_none()


async def counts_of(*, session: AsyncSession, account_id: str) -> tuple[int, int, int]:
    """How many templates the account has, how many are active, and the next position.
    The account's row is locked first (PostgreSQL), so two changes at once cannot both
    pass the limits on the same count."""
    await session.execute(select(Account.id).where(Account.id == account_id).with_for_update())
    row = (
        await session.execute(
            select(
                func.count(),
                func.count().filter(ParsingTemplate.state == "active"),
                func.coalesce(func.max(ParsingTemplate.position) + 1, 0),
            ).where(ParsingTemplate.account_id == account_id)
        )
    ).one()
    return int(row[0]), int(row[1]), int(row[2])

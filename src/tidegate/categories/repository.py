"""Category queries."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.models import Category


async def categories_of(*, session: AsyncSession, account_id: str, type_: str) -> list[Category]:
    result = await session.execute(
        select(Category)
        .where(Category.account_id == account_id, Category.type == type_)
        .order_by(Category.created_at, Category.id)
    )
    return list(result.scalars())


async def category_of(
    *,
    session: AsyncSession,
    account_id: str,
    type_: str,
    category_id: str,
    for_update: bool = False,
) -> Category | None:
    query = select(Category).where(
        Category.id == category_id, Category.account_id == account_id, Category.type == type_
    )
    if for_update:
        query = query.with_for_update()
    return (await session.execute(query)).scalar_one_or_none()


async def named(
    *, session: AsyncSession, account_id: str, type_: str, name_folded: str
) -> Category | None:
    query = select(Category).where(
        Category.account_id == account_id,
        Category.type == type_,
        Category.name_folded == name_folded,
    )
    return (await session.execute(query)).scalar_one_or_none()

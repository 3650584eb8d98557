"""Category queries."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.db.engine import Database, RawQuery
from tidegate.models import Category

# The account's categories of a type, oldest first (the list), and one of them by id.
_CATEGORIES = (
    select(Category.id, Category.type, Category.name)
    .where(Category.account_id == bindparam("account_id"), Category.type == bindparam("type"))
    .order_by(Category.created_at, Category.id)
)
_CATEGORIES_OF = RawQuery(_CATEGORIES)
_CATEGORY_OF = RawQuery(_CATEGORIES.where(Category.id == bindparam("id")))


async def category_records(*, db: Database, account_id: str, type_: str) -> list[Any]:
    """The account's categories of ``type_``, oldest first, as raw records."""
    return await db.fetch_records(_CATEGORIES_OF, {"account_id": account_id, "type": type_})


async def category_record(*, db: Database, account_id: str, type_: str, category_id: str) -> Any:
    """The account's category ``category_id`` of ``type_`` as a raw record, or None."""
    params = {"account_id": account_id, "type": type_, "id": category_id}
    rows = await db.fetch_records(_CATEGORY_OF, params)
    return rows[0] if rows else None


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

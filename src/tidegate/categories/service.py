"""Categories of an account. Names are unique per type regardless of case. No HTTP."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.categories import repository, schemas
from tidegate.errors import Conflict, NotFound
from tidegate.models import Category
from tidegate.models.base import utcnow


def category_schema(category: Category) -> schemas.Category:
    return schemas.Category(id=category.id, type=category.type, name=category.name)


async def _free_name(
    *, session: AsyncSession, account_id: str, type_: str, name: str, own_id: str | None = None
) -> str:
    folded = name.casefold()
    found = await repository.named(
        session=session, account_id=account_id, type_=type_, name_folded=folded
    )
    if found is not None and found.id != own_id:
        raise Conflict(f"A {type_} category named {name!r} already exists")
    return folded


async def list_categories(
    *, session: AsyncSession, account_id: str, type_: str
) -> list[schemas.Category]:
    return [
        category_schema(category)
        for category in await repository.categories_of(
            session=session, account_id=account_id, type_=type_
        )
    ]


async def create_category(
    *, session: AsyncSession, account_id: str, type_: str, body: schemas.CategoryIn
) -> schemas.Category:
    folded = await _free_name(session=session, account_id=account_id, type_=type_, name=body.name)
    category = Category(
        account_id=account_id, type=type_, name=body.name, name_folded=folded, created_at=utcnow()
    )
    session.add(category)
    await session.flush()
    return category_schema(category)


async def _own(
    *,
    session: AsyncSession,
    account_id: str,
    type_: str,
    category_id: str,
    for_update: bool = False,
) -> Category:
    category = await repository.category_of(
        session=session,
        account_id=account_id,
        type_=type_,
        category_id=category_id,
        for_update=for_update,
    )
    if category is None:
        raise NotFound()
    return category


async def get_category(
    *, session: AsyncSession, account_id: str, type_: str, category_id: str
) -> schemas.Category:
    return category_schema(
        await _own(session=session, account_id=account_id, type_=type_, category_id=category_id)
    )


async def update_category(
    *,
    session: AsyncSession,
    account_id: str,
    type_: str,
    category_id: str,
    body: schemas.CategoryIn,
) -> schemas.Category:
    category = await _own(
        session=session,
        account_id=account_id,
        type_=type_,
        category_id=category_id,
        for_update=True,
    )
    category.name_folded = await _free_name(
        session=session, account_id=account_id, type_=type_, name=body.name, own_id=category.id
    )
    category.name = body.name
    await session.flush()
    return category_schema(category)


async def delete_category(
    *, session: AsyncSession, account_id: str, type_: str, category_id: str
) -> schemas.Category:
    category = await _own(
        session=session,
        account_id=account_id,
        type_=type_,
        category_id=category_id,
        for_update=True,
    )
    deleted = category_schema(category)
    await session.delete(category)
    await session.flush()
    return deleted

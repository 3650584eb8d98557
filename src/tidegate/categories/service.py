"""Categories of an account. Names are unique per type regardless of case. No HTTP."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.categories import repository, schemas
from tidegate.db.engine import Database
from tidegate.errors import Conflict, NotFound
from tidegate.models import Category
from tidegate.models.base import utcnow


def category_data(category: Category | Any) -> dict[str, Any]:
    """The category's document as plain data (api/raw_json.py), from the ORM object or a
    raw record (``repository.category_records``)."""
    return {"id": category.id, "type": category.type, "name": category.name}


def category_schema(category: Category) -> schemas.Category:
    return schemas.Category(**category_data(category))


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


async def list_categories(*, db: Database, account_id: str, type_: str) -> list[dict[str, Any]]:
    """The account's categories of ``type_`` as plain data, from one raw read."""
    return [
        category_data(category)
        for category in await repository.category_records(db=db, account_id=account_id, type_=type_)
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


async def read_category(
    *, db: Database, account_id: str, type_: str, category_id: str
) -> dict[str, Any]:
    """The category's document as plain data, from one raw read; another account's or
    another type's category, or none, is the same 404."""
    category = await repository.category_record(
        db=db, account_id=account_id, type_=type_, category_id=category_id
    )
    if category is None:
        raise NotFound()
    return category_data(category)


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

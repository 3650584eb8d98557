"""Preference rows (queries only)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.db.conflicts import insert_for
from tidegate.models import UserPreference


async def of_user(
    *, session: AsyncSession, user_id: str, for_update: bool = False
) -> UserPreference | None:
    """``for_update`` locks the row (PostgreSQL), so that two searches of one person
    each add their query to the other's history; SQLite writers are serialised by BEGIN
    IMMEDIATE already."""
    query = select(UserPreference).where(UserPreference.user_id == user_id)
    if for_update:
        query = query.with_for_update()
    return (await session.execute(query)).scalar_one_or_none()


async def row_for_change(*, session: AsyncSession, user_id: str) -> UserPreference:
    """The person's row, made with the defaults when there is none, locked. INSERT ...
    ON CONFLICT DO NOTHING first: two first changes at once make one row, not a 500."""
    await session.execute(
        insert_for(session, UserPreference)
        .values(user_id=user_id, utc=False, query_history=[], starred=[])
        .on_conflict_do_nothing(index_elements=["user_id"])
    )
    row = await of_user(session=session, user_id=user_id, for_update=True)
    assert row is not None
    return row

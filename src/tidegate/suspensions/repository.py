"""Suspension queries (queries only). The account row is locked for a change
(PostgreSQL ``FOR UPDATE``; SQLite writers are serialised already), so a confirm racing
a resume queues behind it."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.models import Account


async def account_of(
    *, session: AsyncSession, account_id: str, for_update: bool = False
) -> Account | None:
    query = select(Account).where(Account.id == account_id)
    if for_update:
        query = query.with_for_update()
    return (await session.execute(query)).scalar_one_or_none()

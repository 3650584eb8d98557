"""Board queries. Lookups for a change lock the row (see keys.repository)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.models import Account, Board


async def short_id_of(*, session: AsyncSession, account_id: str) -> str | None:
    result = await session.execute(select(Account.short_id).where(Account.id == account_id))
    return result.scalar_one_or_none()


async def boards_of(*, session: AsyncSession, account_id: str) -> list[Board]:
    result = await session.execute(
        select(Board).where(Board.account_id == account_id).order_by(Board.created_at, Board.id)
    )
    return list(result.scalars())


async def board_of(
    *, session: AsyncSession, account_id: str, board_id: str, for_update: bool = False
) -> Board | None:
    query = select(Board).where(Board.id == board_id, Board.account_id == account_id)
    if for_update:
        query = query.with_for_update()
    return (await session.execute(query)).scalar_one_or_none()

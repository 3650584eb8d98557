"""Board queries. Lookups for a change lock the row (see keys.repository)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.db.engine import Database, RawQuery
from tidegate.models import Account, Board

# The account's short id with each of its boards (none: one row of nulls), oldest first.
_BOARD_SUMMARIES = RawQuery(
    select(Account.short_id, Board.id, Board.title)
    .select_from(Account)
    .outerjoin(Board, Board.account_id == Account.id)
    .where(Account.id == bindparam("account_id"))
    .order_by(Board.created_at, Board.id)
)

# A board of the account with the account's short id (the board get).
_BOARD = RawQuery(
    select(Account.short_id, Board.id, Board.title, Board.graphs)
    .select_from(Board)
    .join(Account, Account.id == Board.account_id)
    .where(Board.id == bindparam("board_id"), Board.account_id == bindparam("account_id"))
)


async def short_id_of(*, session: AsyncSession, account_id: str) -> str | None:
    result = await session.execute(select(Account.short_id).where(Account.id == account_id))
    return result.scalar_one_or_none()


async def board_summaries(*, db: Database, account_id: str) -> list[Any]:
    """Records (short_id, id, title) of the account's boards, oldest first; a single one
    with a null id when it has none, and none when the account is gone."""
    return await db.fetch_records(_BOARD_SUMMARIES, {"account_id": account_id})


async def board_record(*, db: Database, account_id: str, board_id: str) -> Any:
    """A record (short_id, id, title, graphs) of the account's board, or None."""
    rows = await db.fetch_records(_BOARD, {"account_id": account_id, "board_id": board_id})
    return rows[0] if rows else None


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

"""Member queries: memberships with their users."""

from __future__ import annotations

from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.models import Membership, User, UserSession


async def members(*, session: AsyncSession, account_id: str) -> list[tuple[User, Membership]]:
    rows = await session.execute(
        select(User, Membership)
        .join(Membership, Membership.user_id == User.id)
        .where(Membership.account_id == account_id)
        .order_by(User.email)
    )
    return [(user, membership) for user, membership in rows]


async def member(
    *, session: AsyncSession, account_id: str, email: str
) -> tuple[User, Membership] | None:
    row = (
        await session.execute(
            select(User, Membership)
            .join(Membership, Membership.user_id == User.id)
            .where(Membership.account_id == account_id, User.email == email)
        )
    ).first()
    return None if row is None else (row[0], row[1])


async def owner_count(*, session: AsyncSession, account_id: str) -> int:
    count = await session.scalar(
        select(func.count()).where(Membership.account_id == account_id, Membership.role == "owner")
    )
    return int(count or 0)


async def end_sessions_in_account(*, session: AsyncSession, user_id: str, account_id: str) -> None:
    await session.execute(
        delete(UserSession).where(
            UserSession.user_id == user_id, UserSession.account_id == account_id
        )
    )

"""Member queries: memberships with their users."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.db.engine import Database, RawQuery
from tidegate.models import Group, GroupMember, Membership, User, UserSession

_MEMBERS = RawQuery(
    select(User.id, User.email, User.password_hash, Membership.role)
    .join(Membership, Membership.user_id == User.id)
    .where(Membership.account_id == bindparam("account_id"))
    .order_by(User.email)
)
# Every member's groups in the account, in groups_of_member's order.
_GROUPS_OF_MEMBERS = RawQuery(
    select(GroupMember.user_id, Group.id)
    .join(GroupMember, GroupMember.group_id == Group.id)
    .where(Group.account_id == bindparam("account_id"))
    .order_by(Group.id)
)


async def member_records(*, db: Database, account_id: str) -> list[Any]:
    """The account's members as raw records (id, email, password_hash, role), by e-mail."""
    return await db.fetch_records(_MEMBERS, {"account_id": account_id})


async def groups_of_members(*, db: Database, account_id: str) -> dict[str, list[str]]:
    """Each member's groups in the account (ids in order), by user id."""
    found: dict[str, list[str]] = {}
    for user_id, group_id in await db.fetch_records(_GROUPS_OF_MEMBERS, {"account_id": account_id}):
        found.setdefault(user_id, []).append(group_id)
    return found


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

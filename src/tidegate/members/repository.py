"""Member queries: memberships with their users."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.db.engine import Database, RawQuery
from tidegate.models import Group, GroupMember, Membership, User, UserSession

# Every group of the account with its members (groups_of_member's order: by group id).
_ACCOUNT_GROUPS = (
    select(GroupMember.user_id, Group.id.label("group_id"))
    .join(GroupMember, GroupMember.group_id == Group.id)
    .where(Group.account_id == bindparam("account_id"))
    .subquery()
)
# The account's members by e-mail, each with its groups in id order: a row per member
# and group (one row with no group for a member of none), so one read answers the list.
_MEMBERS = RawQuery(
    select(
        User.id,
        User.email,
        User.password_hash,
        Membership.role,
        _ACCOUNT_GROUPS.c.group_id,
    )
    .join(Membership, Membership.user_id == User.id)
    .outerjoin(_ACCOUNT_GROUPS, _ACCOUNT_GROUPS.c.user_id == User.id)
    .where(Membership.account_id == bindparam("account_id"))
    .order_by(User.email, _ACCOUNT_GROUPS.c.group_id)
)


async def member_records(*, db: Database, account_id: str) -> list[tuple[Any, list[str]]]:
    """The account's members as raw records (id, email, password_hash, role, and a
    group id not to be read), each with its groups in the account (ids in order), by
    e-mail: one read whatever the number of members."""
    found: list[tuple[Any, list[str]]] = []
    for row in await db.fetch_records(_MEMBERS, {"account_id": account_id}):
        if not found or found[-1][0].id != row.id:
            found.append((row, []))
        if row.group_id is not None:
            found[-1][1].append(row.group_id)
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

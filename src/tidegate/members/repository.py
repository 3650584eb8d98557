"""Member queries: memberships with their users."""

from __future__ import annotations

from typing import Any, NamedTuple

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
_MEMBERS_WITH_GROUPS = (
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
_MEMBERS = RawQuery(_MEMBERS_WITH_GROUPS)
# One of them by e-mail (the member get).
_MEMBER = RawQuery(_MEMBERS_WITH_GROUPS.where(User.email == bindparam("email")))


class MemberRecord(NamedTuple):
    """A member as ``service.member_data`` reads it (as the user and the membership)."""

    id: str
    email: str
    password_hash: str | None
    role: str


def _members(rows: list[Any]) -> list[tuple[MemberRecord, list[str]]]:
    """Rows of ``_MEMBERS_WITH_GROUPS`` folded: each member with its group ids in order.
    The row's group id stays here: a member record has no such field."""
    found: list[tuple[MemberRecord, list[str]]] = []
    for user_id, email, password_hash, role, group_id in rows:
        if not found or found[-1][0].id != user_id:
            found.append((MemberRecord(user_id, email, password_hash, role), []))
        if group_id is not None:
            found[-1][1].append(group_id)
    return found


async def member_records(*, db: Database, account_id: str) -> list[tuple[MemberRecord, list[str]]]:
    """The account's members, each with its groups in the account (ids in order), by
    e-mail: one read whatever the number of members."""
    return _members(await db.fetch_records(_MEMBERS, {"account_id": account_id}))


async def member_record(
    *, db: Database, account_id: str, email: str
) -> tuple[MemberRecord, list[str]] | None:
    """The account's member ``email`` (as stored: lower case) with its groups, or None:
    one read."""
    found = _members(await db.fetch_records(_MEMBER, {"account_id": account_id, "email": email}))
    return found[0] if found else None


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

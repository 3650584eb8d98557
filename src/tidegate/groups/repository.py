"""Group queries."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.db.engine import Database, RawQuery
from tidegate.models import Group, GroupMember, Membership, User

# The account's groups, oldest first, each joined (outer) to its members' e-mails in
# order: a row per group and member (one row with no e-mail for a group of none), so
# one read answers the list (as ``groups_of_account`` and ``member_emails`` do in two).
_GROUPS_WITH_MEMBERS = (
    select(
        Group.id, Group.name, Group.description, Group.apps, Group.hosts, Group.query, User.email
    )
    .select_from(Group)
    .outerjoin(GroupMember, GroupMember.group_id == Group.id)
    .outerjoin(User, User.id == GroupMember.user_id)
    .where(Group.account_id == bindparam("account_id"))
    .order_by(Group.created_at, Group.id, User.email)
)
_GROUPS = RawQuery(_GROUPS_WITH_MEMBERS)
# One of them by id (the group get).
_GROUP = RawQuery(_GROUPS_WITH_MEMBERS.where(Group.id == bindparam("group_id")))


def _groups(rows: list[Any]) -> list[tuple[Any, list[str]]]:
    """Rows of ``_GROUPS_WITH_MEMBERS`` folded: each group (a record whose ``email`` is
    not to be read) with its members' e-mails in order."""
    found: list[tuple[Any, list[str]]] = []
    for row in rows:
        if not found or found[-1][0].id != row.id:
            found.append((row, []))
        if row.email is not None:
            found[-1][1].append(row.email)
    return found


async def group_records(*, db: Database, account_id: str) -> list[tuple[Any, list[str]]]:
    """The account's groups, oldest first, each with its members' e-mails: one read."""
    return _groups(await db.fetch_records(_GROUPS, {"account_id": account_id}))


async def group_record(
    *, db: Database, account_id: str, group_id: str
) -> tuple[Any, list[str]] | None:
    """The account's group ``group_id`` with its members' e-mails, or None: one read."""
    rows = await db.fetch_records(_GROUP, {"account_id": account_id, "group_id": group_id})
    found = _groups(rows)
    return found[0] if found else None


async def groups_of_account(*, session: AsyncSession, account_id: str) -> list[Group]:
    rows = await session.execute(
        select(Group).where(Group.account_id == account_id).order_by(Group.created_at, Group.id)
    )
    return list(rows.scalars())


async def group(*, session: AsyncSession, account_id: str, group_id: str) -> Group | None:
    rows = await session.execute(
        select(Group).where(Group.id == group_id, Group.account_id == account_id)
    )
    return rows.scalar_one_or_none()


async def member_emails(*, session: AsyncSession, group_ids: list[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {group_id: [] for group_id in group_ids}
    if not group_ids:
        return found
    rows = await session.execute(
        select(GroupMember.group_id, User.email)
        .join(User, User.id == GroupMember.user_id)
        .where(GroupMember.group_id.in_(group_ids))
        .order_by(User.email)
    )
    for group_id, email in rows:
        found[group_id].append(email)
    return found


async def groups_of_member(*, session: AsyncSession, account_id: str, user_id: str) -> list[str]:
    rows = await session.execute(
        select(Group.id)
        .join(GroupMember, GroupMember.group_id == Group.id)
        .where(Group.account_id == account_id, GroupMember.user_id == user_id)
        .order_by(Group.id)
    )
    return list(rows.scalars())


async def set_groups_of_member(
    *, session: AsyncSession, account_id: str, user_id: str, group_ids: list[str]
) -> None:
    account_groups = select(Group.id).where(Group.account_id == account_id)
    await session.execute(
        delete(GroupMember).where(
            GroupMember.user_id == user_id, GroupMember.group_id.in_(account_groups)
        )
    )
    for group_id in dict.fromkeys(group_ids):
        session.add(GroupMember(group_id=group_id, user_id=user_id))
    await session.flush()


async def has_owner(*, session: AsyncSession, account_id: str, group_id: str) -> bool:
    """Whether an owner of the account is in the group."""
    rows = await session.execute(
        select(GroupMember.user_id)
        .join(
            Membership,
            (Membership.user_id == GroupMember.user_id) & (Membership.account_id == account_id),
        )
        .where(GroupMember.group_id == group_id, Membership.role == "owner")
        .limit(1)
    )
    return rows.first() is not None

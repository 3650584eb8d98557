"""Group queries."""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.models import Group, GroupMember, Membership, User


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

"""Members: who may act in an account, with which role and in which groups. No HTTP.

Admins manage members; only an owner may make someone an owner or change or remove an
owner (their role, their groups), and the last owner stays (docs/people.md, "Roles").
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from tidegate import mail
from tidegate.auth.principal import Principal
from tidegate.auth.roles import Role
from tidegate.config import Settings
from tidegate.db.engine import Database
from tidegate.errors import Conflict, Forbidden, NotFound
from tidegate.groups import repository as groups_repository
from tidegate.groups.service import check_groups
from tidegate.members import repository, schemas
from tidegate.members.repository import MemberRecord
from tidegate.models import Account, Membership, User
from tidegate.users import service as users


def _owner_rule(principal: Principal, *roles: str) -> None:
    if "owner" in roles and principal.role < Role.OWNER:
        raise Forbidden("Only an owner may make, change or remove an owner")


async def _schema(
    session: AsyncSession,
    account_id: str,
    user: User,
    membership: Membership,
    invitation: users.Invitation | None = None,
) -> schemas.Member:
    groups = await groups_repository.groups_of_member(
        session=session, account_id=account_id, user_id=user.id
    )
    return member_schema(user, membership, groups, invitation)


def member_schema(
    user: User | MemberRecord,
    membership: Membership | MemberRecord,
    groups: list[str],
    invitation: users.Invitation | None,
) -> schemas.Member:
    """From the ORM objects or a raw record (``repository.member_records``) as both."""
    return schemas.Member(**member_data(user, membership, groups, invitation))


def member_data(
    user: User | MemberRecord,
    membership: Membership | MemberRecord,
    groups: list[str],
    invitation: users.Invitation | None,
) -> dict[str, Any]:
    """The member's document as plain data (api/raw_json.py), as ``member_schema``'s."""
    return {
        "email": user.email,
        "role": membership.role,
        "groups": groups,
        "pending": user.password_hash is None,
        "invitation": (
            None if invitation is None else {"link": invitation.link, "emailed": invitation.emailed}
        ),
    }


async def list_members(*, db: Database, account_id: str) -> list[dict[str, Any]]:
    """One read whatever the number of members: the members with their groups."""
    members = await repository.member_records(db=db, account_id=account_id)
    return [member_data(member, member, groups, None) for member, groups in members]


async def _found(*, session: AsyncSession, account_id: str, email: str) -> tuple[User, Membership]:
    found = await repository.member(
        session=session, account_id=account_id, email=email.strip().lower()
    )
    if found is None:
        raise NotFound()
    return found


async def read_member(*, db: Database, account_id: str, email: str) -> dict[str, Any]:
    """The member's document as plain data, from one raw read (as ``_found`` finds it)."""
    found = await repository.member_record(
        db=db, account_id=account_id, email=email.strip().lower()
    )
    if found is None:
        raise NotFound()
    member, groups = found
    return member_data(member, member, groups, None)


async def _invite(
    session: AsyncSession, settings: Settings, outbox: mail.Outbox, user: User, account_id: str
) -> users.Invitation:
    account = await session.get(Account, account_id)
    return await users.invite(
        session=session,
        settings=settings,
        outbox=outbox,
        user=user,
        account_name=account.company if account is not None else account_id,
    )


async def add_member(
    *,
    session: AsyncSession,
    settings: Settings,
    outbox: mail.Outbox,
    principal: Principal,
    account_id: str,
    body: schemas.MemberCreate,
) -> schemas.Member:
    """A new member; an e-mail without a user becomes one, invited to set a password."""
    _owner_rule(principal, body.role)
    await check_groups(session=session, account_id=account_id, group_ids=body.groups)
    email = str(body.email).strip().lower()
    if await repository.member(session=session, account_id=account_id, email=email):
        raise Conflict("This e-mail is already a member of the account")
    user = await users.find_or_create_user(session=session, email=email)
    membership = await users.add_member(
        session=session, user_id=user.id, account_id=account_id, role=body.role
    )
    await groups_repository.set_groups_of_member(
        session=session, account_id=account_id, user_id=user.id, group_ids=body.groups
    )
    invitation = None
    if user.password_hash is None:
        invitation = await _invite(session, settings, outbox, user, account_id)
    return await _schema(session, account_id, user, membership, invitation)


async def update_member(
    *,
    session: AsyncSession,
    principal: Principal,
    account_id: str,
    email: str,
    body: schemas.MemberUpdate,
) -> schemas.Member:
    user, membership = await _found(session=session, account_id=account_id, email=email)
    if body.role is not None and body.role != membership.role:
        _owner_rule(principal, body.role, membership.role)
        if (
            membership.role == "owner"
            and await repository.owner_count(session=session, account_id=account_id) <= 1
        ):
            raise Conflict("The account's last owner stays an owner")
        membership.role = body.role
    if body.groups is not None:
        await check_groups(session=session, account_id=account_id, group_ids=body.groups)
        before = await groups_repository.groups_of_member(
            session=session, account_id=account_id, user_id=user.id
        )
        if sorted(set(body.groups)) != before:
            # A group limits what its members see: only an owner limits an owner.
            _owner_rule(principal, membership.role)
        await groups_repository.set_groups_of_member(
            session=session, account_id=account_id, user_id=user.id, group_ids=body.groups
        )
    await session.flush()
    return await _schema(session, account_id, user, membership)


async def remove_member(
    *, session: AsyncSession, principal: Principal, account_id: str, email: str
) -> schemas.Member:
    user, membership = await _found(session=session, account_id=account_id, email=email)
    _owner_rule(principal, membership.role)
    if (
        membership.role == "owner"
        and await repository.owner_count(session=session, account_id=account_id) <= 1
    ):
        raise Conflict("The account's last owner cannot be removed")
    removed = await _schema(session, account_id, user, membership)
    await groups_repository.set_groups_of_member(
        session=session, account_id=account_id, user_id=user.id, group_ids=[]
    )
    await session.delete(membership)
    await repository.end_sessions_in_account(
        session=session, user_id=user.id, account_id=account_id
    )
    await session.flush()
    return removed


async def reinvite(
    *, session: AsyncSession, settings: Settings, outbox: mail.Outbox, account_id: str, email: str
) -> schemas.Member:
    """A fresh invitation (the earlier link stops working) for a member with no
    password yet; 409 for one who has set theirs (they can reset it)."""
    user, membership = await _found(session=session, account_id=account_id, email=email)
    if user.password_hash is not None:
        raise Conflict("This member has set a password; use the password reset")
    invitation = await _invite(session, settings, outbox, user, account_id)
    return await _schema(session, account_id, user, membership, invitation)

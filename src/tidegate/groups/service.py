"""Groups: an account's sets of members whose access scope limits the lines they see
(tidegate.auth.scope applies it). No HTTP here."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.auth.principal import Principal
from tidegate.auth.roles import Role
from tidegate.auth.scope import validate_scope_query
from tidegate.db.engine import Database
from tidegate.errors import BadRequest, Forbidden, NotFound
from tidegate.groups import repository, schemas
from tidegate.models import Group


def group_data(group: Group | Any, members: list[str]) -> dict[str, Any]:
    """The group's document as plain data (api/raw_json.py), from the ORM object or a
    raw record (``repository.group_records``)."""
    return {
        "id": group.id,
        "name": group.name,
        "description": group.description,
        "apps": list(group.apps or []),
        "hosts": list(group.hosts or []),
        "query": group.query,
        "members": members,
    }


def _schema(group: Group, members: list[str]) -> schemas.Group:
    return schemas.Group(**group_data(group, members))


def _query(text: str | None) -> str | None:
    if text is None or not text.strip():
        return None
    validate_scope_query(text)
    return text.strip()


async def list_groups(*, db: Database, account_id: str) -> list[dict[str, Any]]:
    """The account's groups as plain data, from one raw read."""
    return [
        group_data(group, members)
        for group, members in await repository.group_records(db=db, account_id=account_id)
    ]


async def _own(*, session: AsyncSession, account_id: str, group_id: str) -> Group:
    found = await repository.group(session=session, account_id=account_id, group_id=group_id)
    if found is None:
        raise NotFound()
    return found


async def get_group(*, session: AsyncSession, account_id: str, group_id: str) -> schemas.Group:
    """The group through the session (the writes answer it after their change)."""
    group = await _own(session=session, account_id=account_id, group_id=group_id)
    members = await repository.member_emails(session=session, group_ids=[group.id])
    return _schema(group, members[group.id])


async def read_group(*, db: Database, account_id: str, group_id: str) -> dict[str, Any]:
    """The group's document as plain data, from one raw read; another account's group,
    or none, is the same 404."""
    found = await repository.group_record(db=db, account_id=account_id, group_id=group_id)
    if found is None:
        raise NotFound()
    return group_data(*found)


async def create_group(
    *, session: AsyncSession, account_id: str, body: schemas.GroupCreate
) -> schemas.Group:
    group = Group(
        account_id=account_id,
        name=body.name,
        description=body.description,
        apps=body.apps,
        hosts=body.hosts,
        query=_query(body.query),
    )
    session.add(group)
    await session.flush()
    return _schema(group, [])


async def _owner_rule(
    session: AsyncSession, principal: Principal, account_id: str, group_id: str
) -> None:
    """A group's scope limits what its members see: only an owner changes the scope of
    a group an owner is in (as only an owner changes an owner's role)."""
    if principal.role < Role.OWNER and await repository.has_owner(
        session=session, account_id=account_id, group_id=group_id
    ):
        raise Forbidden("Only an owner may change a group an owner is in")


async def update_group(
    *,
    session: AsyncSession,
    principal: Principal,
    account_id: str,
    group_id: str,
    body: schemas.GroupUpdate,
) -> schemas.Group:
    group = await _own(session=session, account_id=account_id, group_id=group_id)
    given = body.model_fields_set
    if given & {"apps", "hosts", "query"}:
        await _owner_rule(session, principal, account_id, group_id)
    if body.name is not None:
        group.name = body.name
    if body.description is not None:
        group.description = body.description
    if "apps" in given:
        group.apps = body.apps or []
    if "hosts" in given:
        group.hosts = body.hosts or []
    if "query" in given:
        group.query = _query(body.query)
    await session.flush()
    return await get_group(session=session, account_id=account_id, group_id=group_id)


async def delete_group(
    *, session: AsyncSession, principal: Principal, account_id: str, group_id: str
) -> schemas.Group:
    found = await get_group(session=session, account_id=account_id, group_id=group_id)
    await _owner_rule(session, principal, account_id, group_id)
    group = await _own(session=session, account_id=account_id, group_id=group_id)
    await session.delete(group)
    await session.flush()
    return found


async def check_groups(*, session: AsyncSession, account_id: str, group_ids: list[str]) -> None:
    """Every id must name a group of the account (a foreign id like a missing one)."""
    known = {
        g.id for g in await repository.groups_of_account(session=session, account_id=account_id)
    }
    unknown = [group_id for group_id in group_ids if group_id not in known]
    if unknown:
        raise BadRequest(f"groups: no such group {unknown[0]!r}")

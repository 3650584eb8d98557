"""Account key queries. Enterprise keys are never returned from here.

Lookups for a change take a row lock (``for_update``; PostgreSQL. SQLite writers are
serialised by BEGIN IMMEDIATE already), so two requests changing or deleting the same
row queue up, and the second finds it gone (404) instead of failing at flush (500).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.db.engine import Database, RawQuery
from tidegate.models import ApiKey, Membership

ACCOUNT_KINDS = ("service", "ingestion")

# The list's reads, one statement per kind asked for (None: every account kind).
_KEY_COLUMNS = ("id", "name", "kind", "sealed_key", "created_at", "hint", "made_by")
_KEYS_OF = {
    kind: RawQuery(
        select(*(ApiKey.__table__.c[name] for name in _KEY_COLUMNS))
        .where(
            ApiKey.account_id == bindparam("account_id"),
            # Not IN: an expanding parameter is not compiled once (RawQuery).
            or_(*(ApiKey.kind == one for one in ((kind,) if kind else ACCOUNT_KINDS))),
        )
        .order_by(ApiKey.created_at, ApiKey.id)
    )
    for kind in (None, *ACCOUNT_KINDS)
}
_KEY_OF = RawQuery(
    select(*(ApiKey.__table__.c[name] for name in _KEY_COLUMNS)).where(
        ApiKey.id == bindparam("key_id"),
        ApiKey.account_id == bindparam("account_id"),
        or_(*(ApiKey.kind == one for one in ACCOUNT_KINDS)),
    )
)
_ROLES = RawQuery(
    select(Membership.user_id, Membership.role).where(
        Membership.account_id == bindparam("account_id")
    )
)


async def key_records(*, db: Database, account_id: str, kind: str | None) -> list[Any]:
    """The account's keys of ``kind`` (None: every account kind), oldest first, as raw
    records (Database.fetch_records)."""
    return await db.fetch_records(_KEYS_OF[kind], {"account_id": account_id})


async def key_record(*, db: Database, account_id: str, key_id: str) -> Any | None:
    """The account's key ``key_id`` (an account kind) as a raw record, or None."""
    rows = await db.fetch_records(_KEY_OF, {"account_id": account_id, "key_id": key_id})
    return rows[0] if rows else None


async def member_roles(*, db: Database, account_id: str) -> dict[str, str]:
    """The role of every member of the account, by user id."""
    return {
        str(user): str(role)
        for user, role in await db.fetch_records(_ROLES, {"account_id": account_id})
    }


async def key_of(
    *, session: AsyncSession, account_id: str, key_id: str, for_update: bool = False
) -> ApiKey | None:
    query = select(ApiKey).where(
        ApiKey.id == key_id, ApiKey.account_id == account_id, ApiKey.kind.in_(ACCOUNT_KINDS)
    )
    if for_update:
        query = query.with_for_update()
    return (await session.execute(query)).scalar_one_or_none()


async def roles_of(*, session: AsyncSession, account_id: str, user_ids: set[str]) -> dict[str, str]:
    """The current role in the account of each of ``user_ids`` who is a member."""
    if not user_ids:
        return {}
    rows = await session.execute(
        select(Membership.user_id, Membership.role).where(
            Membership.account_id == account_id, Membership.user_id.in_(sorted(user_ids))
        )
    )
    return {str(user): str(role) for user, role in rows.all()}

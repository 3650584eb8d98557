"""Account key queries. Enterprise keys are never returned from here.

Lookups for a change take a row lock (``for_update``; PostgreSQL. SQLite writers are
serialised by BEGIN IMMEDIATE already), so two requests changing or deleting the same
row queue up, and the second finds it gone (404) instead of failing at flush (500).
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.models import ApiKey, Membership

ACCOUNT_KINDS = ("service", "ingestion")


async def keys_of(*, session: AsyncSession, account_id: str, kind: str | None) -> list[ApiKey]:
    kinds = (kind,) if kind is not None else ACCOUNT_KINDS
    result = await session.execute(
        select(ApiKey)
        .where(ApiKey.account_id == account_id, ApiKey.kind.in_(kinds))
        .order_by(ApiKey.created_at, ApiKey.id)
    )
    return list(result.scalars())


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

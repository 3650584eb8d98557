"""Credential lookups (queries only)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.models import Account, ApiKey


async def key_by_hash(
    *, session: AsyncSession, key_hash: str
) -> tuple[ApiKey, Account | None] | None:
    row = (
        await session.execute(
            select(ApiKey, Account)
            .outerjoin(Account, Account.id == ApiKey.account_id)
            .where(ApiKey.key_hash == key_hash)
        )
    ).first()
    return None if row is None else (row[0], row[1])


async def child_account(
    *, session: AsyncSession, enterprise_id: str, account_id: str
) -> Account | None:
    return (
        await session.execute(
            select(Account).where(Account.id == account_id, Account.enterprise_id == enterprise_id)
        )
    ).scalar_one_or_none()

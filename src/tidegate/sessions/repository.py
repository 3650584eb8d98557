"""Session rows and the accounts a credential may act in (queries only)."""

from __future__ import annotations

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.models import Account, UserSession


async def create(
    *,
    session: AsyncSession,
    token_hash: str,
    csrf_hash: str,
    user_id: str | None,
    key_id: str | None,
    account_id: str | None,
    now_ms: int,
    expires_ms: int,
) -> None:
    # Ended sessions of anyone are swept here, so the table holds live ones only.
    await session.execute(delete(UserSession).where(UserSession.expires_ms < now_ms))
    session.add(
        UserSession(
            token_hash=token_hash,
            csrf_hash=csrf_hash,
            user_id=user_id,
            key_id=key_id,
            account_id=account_id,
            created_ms=now_ms,
            last_seen_ms=now_ms,
            expires_ms=expires_ms,
        )
    )
    await session.flush()


async def switch_account(*, session: AsyncSession, session_id: str, account_id: str) -> None:
    await session.execute(
        update(UserSession).where(UserSession.id == session_id).values(account_id=account_id)
    )


async def delete_session(*, session: AsyncSession, session_id: str) -> None:
    await session.execute(delete(UserSession).where(UserSession.id == session_id))


async def account(*, session: AsyncSession, account_id: str) -> Account | None:
    return await session.get(Account, account_id)


async def enterprise_accounts(*, session: AsyncSession, enterprise_id: str) -> list[Account]:
    rows = await session.execute(
        select(Account)
        .where(Account.enterprise_id == enterprise_id)
        .order_by(Account.created_at, Account.id)
        .limit(500)
    )
    return list(rows.scalars())

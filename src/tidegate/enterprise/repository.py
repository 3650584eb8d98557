"""Enterprise, account and owner queries."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.models import Account, AccountFeature, Enterprise, User


async def enterprise(*, session: AsyncSession, enterprise_id: str) -> Enterprise | None:
    return await session.get(Enterprise, enterprise_id)


async def accounts_of(*, session: AsyncSession, enterprise_id: str) -> list[Account]:
    result = await session.execute(
        select(Account)
        .where(Account.enterprise_id == enterprise_id)
        .order_by(Account.created_at, Account.id)
    )
    return list(result.scalars())


async def users_of(*, session: AsyncSession, enterprise_id: str) -> list[User]:
    result = await session.execute(select(User).where(User.enterprise_id == enterprise_id))
    return list(result.scalars())


async def account_with_owner(
    *, session: AsyncSession, enterprise_id: str, account_id: str
) -> tuple[Account, User] | None:
    row = (
        await session.execute(
            select(Account, User)
            .join(User, User.id == Account.owner_id)
            .where(Account.id == account_id, Account.enterprise_id == enterprise_id)
        )
    ).first()
    return None if row is None else (row[0], row[1])


async def short_ids_owned_by(*, session: AsyncSession, user_id: str) -> list[str]:
    result = await session.execute(
        select(Account.short_id)
        .where(Account.owner_id == user_id)
        .order_by(Account.created_at)
        .limit(200)
    )
    return list(result.scalars())


async def user_by_email(*, session: AsyncSession, enterprise_id: str, email: str) -> User | None:
    result = await session.execute(
        select(User).where(User.enterprise_id == enterprise_id, User.email == email)
    )
    return result.scalar_one_or_none()


async def short_id_taken(*, session: AsyncSession, short_id: str) -> bool:
    result = await session.execute(select(Account.id).where(Account.short_id == short_id))
    return result.first() is not None


async def features_of(*, session: AsyncSession, account_id: str) -> list[AccountFeature]:
    result = await session.execute(
        select(AccountFeature)
        .where(AccountFeature.account_id == account_id)
        .order_by(AccountFeature.feature)
    )
    return list(result.scalars())


async def feature(*, session: AsyncSession, account_id: str, name: str) -> AccountFeature | None:
    return await session.get(AccountFeature, (account_id, name))

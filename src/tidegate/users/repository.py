"""User, membership and one-use token queries."""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.models import Account, Membership, User, UserSession, UserToken


async def user_by_email(*, session: AsyncSession, email: str) -> User | None:
    return (await session.execute(select(User).where(User.email == email))).scalar_one_or_none()


async def user_by_id(*, session: AsyncSession, user_id: str) -> User | None:
    return await session.get(User, user_id)


async def find_or_create_user(*, session: AsyncSession, email: str) -> User:
    """Two requests may create the same new user at once: the loser of the unique
    e-mail race takes the winner's row."""
    found = await user_by_email(session=session, email=email)
    if found is not None:
        return found
    try:
        async with session.begin_nested():
            user = User(email=email, verified=False)
            session.add(user)
        return user
    except IntegrityError:
        found = await user_by_email(session=session, email=email)
        if found is None:
            raise
        return found


async def membership(*, session: AsyncSession, user_id: str, account_id: str) -> Membership | None:
    return await session.get(Membership, (user_id, account_id))


async def memberships_of(*, session: AsyncSession, user_id: str) -> list[tuple[Account, str]]:
    """The user's accounts with their role, oldest membership first (at most 500)."""
    rows = await session.execute(
        select(Account, Membership.role)
        .join(Membership, Membership.account_id == Account.id)
        .where(Membership.user_id == user_id)
        .order_by(Membership.created_at, Account.id)
        .limit(500)
    )
    return [(account, role) for account, role in rows]


async def add_token(
    *, session: AsyncSession, user_id: str, purpose: str, token_hash: str, expires_ms: int
) -> None:
    # One live token per purpose: a new invitation or reset replaces the last.
    await session.execute(
        delete(UserToken).where(UserToken.user_id == user_id, UserToken.purpose == purpose)
    )
    session.add(
        UserToken(user_id=user_id, purpose=purpose, token_hash=token_hash, expires_ms=expires_ms)
    )
    await session.flush()


async def take_token(*, session: AsyncSession, token_hash: str) -> tuple[str, str, int] | None:
    """``(user_id, purpose, expires_ms)`` of the token, deleted as it is read: of two
    requests presenting it at once, one gets it."""
    row = (
        await session.execute(
            delete(UserToken)
            .where(UserToken.token_hash == token_hash)
            .returning(UserToken.user_id, UserToken.purpose, UserToken.expires_ms)
        )
    ).first()
    return None if row is None else (row[0], row[1], int(row[2]))


async def end_sessions_of(*, session: AsyncSession, user_id: str) -> None:
    await session.execute(delete(UserSession).where(UserSession.user_id == user_id))

"""Enterprise, account and owner queries."""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypeAlias

from sqlalchemy import Row, bindparam, delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.db.conflicts import insert_for
from tidegate.db.engine import Database, RawQuery
from tidegate.models import Account, AccountFeature, Enterprise, Membership, User

_accounts = Account.__table__

# A row of _ACCOUNT_VIEW: an account's columns with its owner's (owner_*).
AccountView: TypeAlias = Row[*tuple[Any, ...]]
_users = User.__table__

# The account representation reads an account with its owner. Prebuilt Core statements
# (compiled and cache-keyed once) returning plain rows: the detail read is the API's
# hottest path.
_ACCOUNT_VIEW = select(
    _accounts.c.id,
    _accounts.c.enterprise_id,
    _accounts.c.short_id,
    _accounts.c.company,
    _accounts.c.deactivated_at,
    _accounts.c.external_id,
    _accounts.c.plan_type,
    _accounts.c.retention,
    _accounts.c.status,
    _accounts.c.created_at,
    _accounts.c.meta,
    _users.c.id.label("owner_id"),
    _users.c.email.label("owner_email"),
    _users.c.firstname.label("owner_firstname"),
    _users.c.lastname.label("owner_lastname"),
    _users.c.verified.label("owner_verified"),
).select_from(_accounts.join(_users, _users.c.id == _accounts.c.owner_id))
_ONE_ACCOUNT_VIEW = _ACCOUNT_VIEW.where(
    _accounts.c.id == bindparam("account_id"),
    _accounts.c.enterprise_id == bindparam("enterprise_id"),
)
_ENTERPRISE_ACCOUNT_VIEWS = _ACCOUNT_VIEW.where(
    _accounts.c.enterprise_id == bindparam("enterprise_id")
).order_by(_accounts.c.created_at, _accounts.c.id)
# Users are one per e-mail across the server: an owner's accounts are listed within the
# enterprise asking, never another tenant's.
_OWNED_SHORT_IDS = (
    select(_accounts.c.short_id)
    .where(
        _accounts.c.owner_id == bindparam("owner_id"),
        _accounts.c.enterprise_id == bindparam("enterprise_id"),
    )
    .order_by(_accounts.c.created_at)
    .limit(200)
)


_RAW_ACCOUNT_VIEW = RawQuery(_ONE_ACCOUNT_VIEW)
# By id alone: the session's reads of the accounts a credential may act in, which may
# belong to several enterprises (a person's memberships).
_RAW_ACCOUNT_VIEW_BY_ID = RawQuery(_ACCOUNT_VIEW.where(_accounts.c.id == bindparam("account_id")))
_RAW_ACCOUNT_VIEWS = RawQuery(_ENTERPRISE_ACCOUNT_VIEWS)
# A person's accounts (at most 200, in the order they joined them), which may belong to
# several enterprises.
_memberships = Membership.__table__
_RAW_MEMBER_ACCOUNT_VIEWS = RawQuery(
    _ACCOUNT_VIEW.join(_memberships, _memberships.c.account_id == _accounts.c.id)
    .where(_memberships.c.user_id == bindparam("user_id"))
    .order_by(_memberships.c.created_at, _accounts.c.id)
    .limit(200)
)
_RAW_ENTERPRISE = RawQuery(
    select(*Enterprise.__table__.columns).where(Enterprise.id == bindparam("enterprise_id"))
)


async def raw_enterprise(*, db: Database, enterprise_id: str) -> Any:
    """The enterprise as a raw record (Database.fetch_records), or None."""
    rows = await db.fetch_records(_RAW_ENTERPRISE, {"enterprise_id": enterprise_id})
    return rows[0] if rows else None


async def raw_account_views(*, db: Database, enterprise_id: str) -> list[Any]:
    """``account_views`` as raw records."""
    return await db.fetch_records(_RAW_ACCOUNT_VIEWS, {"enterprise_id": enterprise_id})


_RAW_OWNED_SHORT_IDS = RawQuery(_OWNED_SHORT_IDS)


async def raw_account_view(
    *, db: Database, enterprise_id: str, account_id: str
) -> tuple[Any, ...] | None:
    """The account read's hot path: the row as the driver gives it (Database.fetch)."""
    rows = await db.fetch(
        _RAW_ACCOUNT_VIEW, {"account_id": account_id, "enterprise_id": enterprise_id}
    )
    return rows[0] if rows else None


async def raw_account_view_by_id(*, db: Database, account_id: str) -> tuple[Any, ...] | None:
    """``raw_account_view`` of whichever enterprise holds the account."""
    rows = await db.fetch(_RAW_ACCOUNT_VIEW_BY_ID, {"account_id": account_id})
    return rows[0] if rows else None


async def raw_member_account_views(*, db: Database, user_id: str) -> list[tuple[Any, ...]]:
    """``raw_account_view`` of each account the person is a member of, in one read."""
    return list(await db.fetch(_RAW_MEMBER_ACCOUNT_VIEWS, {"user_id": user_id}))


async def raw_short_ids_owned_by(*, db: Database, user_id: str, enterprise_id: str) -> list[str]:
    return [
        row[0]
        for row in await db.fetch(
            _RAW_OWNED_SHORT_IDS, {"owner_id": user_id, "enterprise_id": enterprise_id}
        )
    ]


async def account_view(
    *, session: AsyncSession, enterprise_id: str, account_id: str
) -> AccountView | None:
    result = await session.execute(
        _ONE_ACCOUNT_VIEW, {"account_id": account_id, "enterprise_id": enterprise_id}
    )
    return result.first()


async def account_views(*, session: AsyncSession, enterprise_id: str) -> list[AccountView]:
    return list(await session.execute(_ENTERPRISE_ACCOUNT_VIEWS, {"enterprise_id": enterprise_id}))


async def enterprise(*, session: AsyncSession, enterprise_id: str) -> Enterprise | None:
    return await session.get(Enterprise, enterprise_id)


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


async def short_ids_owned_by(
    *, session: AsyncSession, user_id: str, enterprise_id: str
) -> list[str]:
    params = {"owner_id": user_id, "enterprise_id": enterprise_id}
    return list((await session.execute(_OWNED_SHORT_IDS, params)).scalars())


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


# The enterprise's account (with its owner, as ``account_with_owner``) joined (outer) to
# its enabled features by name: no row when the account is not the enterprise's, one
# row of nulls when none is enabled.
_RAW_FEATURES = RawQuery(
    select(AccountFeature.feature, AccountFeature.created_at)
    .select_from(Account)
    .join(User, User.id == Account.owner_id)
    .outerjoin(AccountFeature, AccountFeature.account_id == Account.id)
    .where(
        Account.id == bindparam("account_id"), Account.enterprise_id == bindparam("enterprise_id")
    )
    .order_by(AccountFeature.feature)
)


async def feature_records(*, db: Database, enterprise_id: str, account_id: str) -> list[Any] | None:
    """The enterprise's account's enabled features as raw records (``feature``,
    ``created_at``) by name, or None when the account is not the enterprise's: one read."""
    params = {"enterprise_id": enterprise_id, "account_id": account_id}
    rows = await db.fetch_records(_RAW_FEATURES, params)
    return [row for row in rows if row.feature is not None] if rows else None


_RAW_FEATURE_NAMES = RawQuery(
    select(AccountFeature.feature).where(AccountFeature.account_id == bindparam("account_id"))
)


async def feature_names(*, db: Database, account_id: str) -> frozenset[str]:
    """The account's enabled features, by name: one raw read."""
    rows = await db.fetch_records(_RAW_FEATURE_NAMES, {"account_id": account_id})
    return frozenset(row.feature for row in rows)


async def feature(*, session: AsyncSession, account_id: str, name: str) -> AccountFeature | None:
    return await session.get(AccountFeature, (account_id, name))


async def enable_feature(
    *, session: AsyncSession, account_id: str, name: str, now: datetime
) -> datetime:
    """Idempotent under concurrency: INSERT ... ON CONFLICT DO NOTHING, then read the
    row (ours or the one a concurrent request committed first). Returns its creation time."""
    await session.execute(
        insert_for(session, AccountFeature)
        .values(account_id=account_id, feature=name, created_at=now)
        .on_conflict_do_nothing(index_elements=["account_id", "feature"])
    )
    created = await session.scalar(
        select(AccountFeature.created_at).where(
            AccountFeature.account_id == account_id, AccountFeature.feature == name
        )
    )
    return now if created is None else created


async def disable_feature(*, session: AsyncSession, account_id: str, name: str) -> None:
    """Idempotent: deleting a row that a concurrent request deleted first is no error."""
    await session.execute(
        delete(AccountFeature).where(
            AccountFeature.account_id == account_id, AccountFeature.feature == name
        )
    )

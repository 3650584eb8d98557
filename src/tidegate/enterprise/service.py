"""Enterprise rules: accounts, owners, activation and beta features. No HTTP here."""

from __future__ import annotations

import secrets
from collections import defaultdict

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.auth.dependencies import MANAGEMENT_DOMAIN
from tidegate.auth.secrets import hash_secret, hint, new_enterprise_key
from tidegate.enterprise import repository, schemas
from tidegate.errors import NotFound
from tidegate.models import Account, AccountFeature, ApiKey, Enterprise, User
from tidegate.models.base import utcnow

KNOWN_FEATURES = frozenset({"throttle-processor"})


def _owner(user: User, short_ids: list[str]) -> schemas.AccountOwner:
    first, last = user.firstname or "", user.lastname or ""
    name = f"{first} {last}".strip() or user.email.split("@", 1)[0]
    return schemas.AccountOwner(
        user_id=user.id,
        firstname=first,
        lastname=last,
        email=user.email,
        name=name[:125],
        accounts=short_ids[:200],
        enterprise_ids=[user.enterprise_id],
        verified=user.verified,
    )


def account_schema(account: Account, owner: User, owner_short_ids: list[str]) -> schemas.Account:
    return schemas.Account(
        account_id=account.id,
        enterprise_id=account.enterprise_id,
        account=account.short_id,
        company=account.company,
        deactivated=account.deactivated_at,
        owneremail=owner.email,
        external_id=account.external_id,
        plan=schemas.Plan(type=account.plan_type),
        quota=schemas.Quota(retention=account.retention),
        retention=account.retention,
        status=account.status,
        created=account.created_at,
        meta=account.meta or {},
        owner=_owner(owner, owner_short_ids),
    )


async def create_enterprise(
    *,
    session: AsyncSession,
    name: str,
    partner: str | None = None,
    parent_enterprise_id: str | None = None,
) -> tuple[Enterprise, str]:
    """A new enterprise and its first enterprise key; the key is returned once, here."""
    enterprise = Enterprise(name=name, partner=partner, parent_enterprise_id=parent_enterprise_id)
    session.add(enterprise)
    await session.flush()
    token = new_enterprise_key()
    session.add(
        ApiKey(
            kind="enterprise",
            enterprise_id=enterprise.id,
            name="enterprise key",
            key_hash=hash_secret(token, domain=MANAGEMENT_DOMAIN),
            hint=hint(token),
        )
    )
    await session.flush()
    return enterprise, token


async def get_enterprise(*, session: AsyncSession, enterprise_id: str) -> schemas.Enterprise:
    enterprise = await repository.enterprise(session=session, enterprise_id=enterprise_id)
    if enterprise is None:
        raise NotFound()
    accounts = await repository.accounts_of(session=session, enterprise_id=enterprise_id)
    users = {
        user.id: user
        for user in await repository.users_of(session=session, enterprise_id=enterprise_id)
    }
    owned: dict[str, list[str]] = defaultdict(list)
    for account in accounts:
        owned[account.owner_id].append(account.short_id)
    return schemas.Enterprise(
        enterprise_id=enterprise.id,
        name=enterprise.name,
        status=enterprise.status,
        parent_enterprise_id=enterprise.parent_enterprise_id,
        partner=enterprise.partner,
        accounts=[
            account_schema(account, users[account.owner_id], owned[account.owner_id])
            for account in accounts
        ],
    )


async def list_accounts(*, session: AsyncSession, enterprise_id: str) -> list[schemas.Account]:
    return (await get_enterprise(session=session, enterprise_id=enterprise_id)).accounts


async def get_account(
    *, session: AsyncSession, enterprise_id: str, account_id: str
) -> schemas.Account:
    found = await repository.account_with_owner(
        session=session, enterprise_id=enterprise_id, account_id=account_id
    )
    if found is None:
        raise NotFound()
    account, owner = found
    short_ids = await repository.short_ids_owned_by(session=session, user_id=owner.id)
    return account_schema(account, owner, short_ids)


async def _new_short_id(session: AsyncSession) -> str:
    while True:
        candidate = secrets.token_hex(5)
        if not await repository.short_id_taken(session=session, short_id=candidate):
            return candidate


async def _find_or_create_owner(*, session: AsyncSession, enterprise_id: str, email: str) -> User:
    owner = await repository.user_by_email(
        session=session, enterprise_id=enterprise_id, email=email
    )
    if owner is not None:
        return owner
    try:
        # Two requests may create accounts for the same new owner at once: the loser of
        # the unique (enterprise_id, email) race takes the winner's row.
        async with session.begin_nested():
            owner = User(enterprise_id=enterprise_id, email=email, verified=False)
            session.add(owner)
        return owner
    except IntegrityError:
        found = await repository.user_by_email(
            session=session, enterprise_id=enterprise_id, email=email
        )
        if found is None:
            raise
        return found


async def create_account(
    *, session: AsyncSession, enterprise_id: str, body: schemas.AccountCreate
) -> schemas.Account:
    owner = await _find_or_create_owner(
        session=session, enterprise_id=enterprise_id, email=str(body.owneremail).lower()
    )
    account = Account(
        enterprise_id=enterprise_id,
        short_id=await _new_short_id(session),
        company=body.company,
        owner_id=owner.id,
        external_id=body.external_id,
        plan_type=body.plan.type if body.plan else "enterprise",
        retention=body.retention,
        status="active",
        enable_syslog=body.enable_syslog,
        meta={},
        created_at=utcnow(),
    )
    session.add(account)
    await session.flush()
    return await get_account(session=session, enterprise_id=enterprise_id, account_id=account.id)


async def update_account(
    *, session: AsyncSession, enterprise_id: str, account_id: str, body: schemas.AccountUpdate
) -> schemas.Account:
    found = await repository.account_with_owner(
        session=session, enterprise_id=enterprise_id, account_id=account_id
    )
    if found is None:
        raise NotFound()
    account, _owner = found
    given = body.model_fields_set
    if "company" in given and body.company is not None:
        account.company = body.company
    if "external_id" in given:
        account.external_id = body.external_id
    if "plan" in given and body.plan is not None:
        account.plan_type = body.plan.type
    if "retention" in given and body.retention is not None:
        account.retention = body.retention
    if "status" in given and body.status is not None and body.status != account.status:
        # Deactivating stamps the time; any way back out of deactivated clears it.
        account.deactivated_at = utcnow() if body.status == "deactivated" else None
        account.status = body.status
    await session.flush()
    return await get_account(session=session, enterprise_id=enterprise_id, account_id=account_id)


async def _own_account(*, session: AsyncSession, enterprise_id: str, account_id: str) -> Account:
    found = await repository.account_with_owner(
        session=session, enterprise_id=enterprise_id, account_id=account_id
    )
    if found is None:
        raise NotFound()
    return found[0]


def _feature(account_id: str, row: AccountFeature | None, name: str) -> schemas.Feature:
    return schemas.Feature(
        feature=name,
        enabled=row is not None,
        account_id=account_id,
        created=row.created_at if row else None,
    )


def _known(name: str) -> None:
    if name not in KNOWN_FEATURES:
        raise NotFound(f"Unknown feature '{name}'; known: {', '.join(sorted(KNOWN_FEATURES))}")


async def list_features(
    *, session: AsyncSession, enterprise_id: str, account_id: str
) -> list[schemas.Feature]:
    await _own_account(session=session, enterprise_id=enterprise_id, account_id=account_id)
    enabled = {
        row.feature: row
        for row in await repository.features_of(session=session, account_id=account_id)
    }
    return [_feature(account_id, enabled.get(name), name) for name in sorted(KNOWN_FEATURES)]


async def enable_feature(
    *, session: AsyncSession, enterprise_id: str, account_id: str, name: str
) -> schemas.Feature:
    _known(name)
    await _own_account(session=session, enterprise_id=enterprise_id, account_id=account_id)
    row = await repository.feature(session=session, account_id=account_id, name=name)
    if row is None:
        row = AccountFeature(account_id=account_id, feature=name, created_at=utcnow())
        session.add(row)
        await session.flush()
    return _feature(account_id, row, name)


async def disable_feature(
    *, session: AsyncSession, enterprise_id: str, account_id: str, name: str
) -> schemas.Feature:
    _known(name)
    await _own_account(session=session, enterprise_id=enterprise_id, account_id=account_id)
    row = await repository.feature(session=session, account_id=account_id, name=name)
    if row is not None:
        await session.delete(row)
        await session.flush()
    return _feature(account_id, None, name)


async def has_feature(*, session: AsyncSession, account_id: str, name: str) -> bool:
    """For other domains: is a beta feature enabled for this account?"""
    return await repository.feature(session=session, account_id=account_id, name=name) is not None

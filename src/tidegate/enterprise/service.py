"""Enterprise rules: accounts, owners, activation and beta features. No HTTP here."""

from __future__ import annotations

import secrets
from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate import mail
from tidegate.auth.secrets import MANAGEMENT_DOMAIN, hash_secret, hint, new_enterprise_key
from tidegate.config import Settings
from tidegate.db.engine import Database
from tidegate.enterprise import repository, schemas
from tidegate.enterprise.repository import AccountView
from tidegate.errors import NotFound
from tidegate.models import Account, AccountFeature, ApiKey, Enterprise
from tidegate.models.base import utcnow
from tidegate.users import service as users

KNOWN_FEATURES = frozenset({"throttle-processor"})


def account_schema(view: AccountView, owner_short_ids: list[str]) -> schemas.Account:
    """The spec's Account from an account-with-owner row (repository.account_view)."""
    first, last = view.owner_firstname or "", view.owner_lastname or ""
    name = f"{first} {last}".strip() or view.owner_email.split("@", 1)[0]
    return schemas.Account(
        account_id=view.id,
        enterprise_id=view.enterprise_id,
        account=view.short_id,
        company=view.company,
        deactivated=view.deactivated_at,
        owneremail=view.owner_email,
        external_id=view.external_id,
        plan=schemas.Plan(type=view.plan_type),
        quota=schemas.Quota(retention=view.retention),
        retention=view.retention,
        status=view.status,
        created=view.created_at,
        meta=view.meta or {},
        owner=schemas.AccountOwner(
            user_id=view.owner_id,
            firstname=first,
            lastname=last,
            email=view.owner_email,
            name=name[:125],
            accounts=owner_short_ids[:200],
            enterprise_ids=[view.enterprise_id],
            verified=view.owner_verified,
        ),
    )


def _utc(value: Any) -> datetime | None:
    """A datetime column as the raw reader gives it: SQLite's text (stored in UTC by
    UTCDateTime) or PostgreSQL's aware datetime."""
    if value is None or isinstance(value, datetime):
        return value
    parsed = datetime.fromisoformat(value)
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def account_data(row: tuple[Any, ...], owner_short_ids: list[str]) -> dict[str, Any]:
    """The spec's Account as plain data (for orjson) from a raw account-view row, the
    same document account_schema builds (tests compare the two paths)."""
    (
        account_id, enterprise_id, short_id, company, deactivated_at, external_id,
        plan_type, retention, status, created_at, meta, owner_id, owner_email,
        owner_firstname, owner_lastname, owner_verified,
    ) = row  # fmt: skip
    first, last = owner_firstname or "", owner_lastname or ""
    name = f"{first} {last}".strip() or owner_email.split("@", 1)[0]
    if isinstance(meta, str | bytes):
        meta = orjson.loads(meta)
    return {
        "account_id": account_id,
        "enterprise_id": enterprise_id,
        "account": short_id,
        "company": company,
        "deactivated": _utc(deactivated_at),
        "owneremail": owner_email,
        "external_id": external_id,
        "plan": {"type": plan_type},
        "quota": {"retention": retention},
        "retention": retention,
        "status": status,
        "created": _utc(created_at),
        "meta": meta or {},
        "owner": {
            "user_id": owner_id,
            "firstname": first,
            "lastname": last,
            "email": owner_email,
            "name": name[:125],
            "accounts": owner_short_ids[:200],
            "enterprise_ids": [enterprise_id],
            "verified": bool(owner_verified),
        },
    }


async def read_account(*, db: Database, enterprise_id: str, account_id: str) -> dict[str, Any]:
    """GET of one account, the API's hottest read: raw rows, no session, no models."""
    row = await repository.raw_account_view(
        db=db, enterprise_id=enterprise_id, account_id=account_id
    )
    if row is None:
        raise NotFound()
    return await _account_document(db, row)


async def _account_document(db: Database, row: tuple[Any, ...]) -> dict[str, Any]:
    """``account_data`` of a raw account-view row, with its owner's short ids in the
    row's enterprise."""
    short_ids = await repository.raw_short_ids_owned_by(
        db=db, user_id=row[11], enterprise_id=row[1]
    )
    return account_data(row, short_ids)


async def read_account_by_id(*, db: Database, account_id: str) -> dict[str, Any] | None:
    """``read_account`` of whichever enterprise holds the account, or None."""
    row = await repository.raw_account_view_by_id(db=db, account_id=account_id)
    return None if row is None else await _account_document(db, row)


async def read_member_accounts(*, db: Database, user_id: str) -> list[dict[str, Any]]:
    """``read_account`` of each account the person is a member of (at most 200, in the
    order they joined them): one read of the accounts, one of each owner's short ids in
    their enterprise."""
    rows = await repository.raw_member_account_views(db=db, user_id=user_id)
    owned: dict[tuple[str, str], list[str]] = {}
    for row in rows:
        owner = (row[11], row[1])
        if owner not in owned:
            owned[owner] = await repository.raw_short_ids_owned_by(
                db=db, user_id=row[11], enterprise_id=row[1]
            )
    return [account_data(row, owned[row[11], row[1]]) for row in rows]


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
    views = await repository.account_views(session=session, enterprise_id=enterprise_id)
    return _enterprise_schema(enterprise, views)


async def read_enterprise(*, db: Database, enterprise_id: str) -> schemas.Enterprise:
    """get_enterprise on raw records, no session (the routes' reads)."""
    enterprise = await repository.raw_enterprise(db=db, enterprise_id=enterprise_id)
    if enterprise is None:
        raise NotFound()
    views = await repository.raw_account_views(db=db, enterprise_id=enterprise_id)
    return _enterprise_schema(enterprise, views)


def _enterprise_schema(enterprise: Enterprise, views: list[AccountView]) -> schemas.Enterprise:
    """From the ORM object or a raw record, with its account views, oldest first."""
    owned = _owned(views)
    return schemas.Enterprise(
        enterprise_id=enterprise.id,
        name=enterprise.name,
        status=enterprise.status,
        parent_enterprise_id=enterprise.parent_enterprise_id,
        partner=enterprise.partner,
        accounts=[account_schema(view, owned[view.owner_id]) for view in views],
    )


async def list_accounts(*, session: AsyncSession, enterprise_id: str) -> list[schemas.Account]:
    return (await get_enterprise(session=session, enterprise_id=enterprise_id)).accounts


def _owned(views: list[AccountView]) -> dict[str, list[str]]:
    """Each owner's accounts among ``views`` (their short ids, in the views' order)."""
    owned: dict[str, list[str]] = defaultdict(list)
    for view in views:
        owned[view.owner_id].append(view.short_id)
    return owned


async def read_account_list(*, db: Database, enterprise_id: str) -> list[dict[str, Any]]:
    """The list of accounts as plain data (for orjson), each as read_account's: the
    documents list_accounts builds (tests compare the two paths)."""
    if await repository.raw_enterprise(db=db, enterprise_id=enterprise_id) is None:
        raise NotFound()
    views = await repository.raw_account_views(db=db, enterprise_id=enterprise_id)
    owned = _owned(views)
    return [account_data(view, owned[view.owner_id]) for view in views]


async def get_account(
    *, session: AsyncSession, enterprise_id: str, account_id: str
) -> schemas.Account:
    view = await repository.account_view(
        session=session, enterprise_id=enterprise_id, account_id=account_id
    )
    if view is None:
        raise NotFound()
    short_ids = await repository.short_ids_owned_by(
        session=session, user_id=view.owner_id, enterprise_id=enterprise_id
    )
    return account_schema(view, short_ids)


async def _new_short_id(session: AsyncSession) -> str:
    while True:
        candidate = secrets.token_hex(5)
        if not await repository.short_id_taken(session=session, short_id=candidate):
            return candidate


async def create_account(
    *,
    session: AsyncSession,
    enterprise_id: str,
    body: schemas.AccountCreate,
    settings: Settings | None = None,
    outbox: mail.Outbox | None = None,
) -> schemas.Account:
    """The account, with its owner as its first member (owner role). An owner with no
    password yet gets an invitation, put in ``outbox`` for the endpoint to e-mail after
    the commit (docs/people.md); without settings (scripts, benches) none is made."""
    owner = await users.find_or_create_user(session=session, email=str(body.owneremail))
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
    await users.add_member(session=session, user_id=owner.id, account_id=account.id, role="owner")
    if owner.password_hash is None and settings is not None:
        await users.invite(
            session=session,
            settings=settings,
            outbox=outbox if outbox is not None else [],
            user=owner,
            account_name=account.company,
        )
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
    if "enable_syslog" in given and body.enable_syslog is not None:
        account.enable_syslog = body.enable_syslog
    await session.flush()
    return await get_account(session=session, enterprise_id=enterprise_id, account_id=account_id)


async def _own_account(*, session: AsyncSession, enterprise_id: str, account_id: str) -> Account:
    found = await repository.account_with_owner(
        session=session, enterprise_id=enterprise_id, account_id=account_id
    )
    if found is None:
        raise NotFound()
    return found[0]


def feature_data(account_id: str, row: AccountFeature | Any | None, name: str) -> dict[str, Any]:
    """The feature's document as plain data, from the ORM object or a raw record
    (``repository.feature_records``) of it when enabled, None when not."""
    return {
        "feature": name,
        "enabled": row is not None,
        "account_id": account_id,
        "created": row.created_at if row else None,
    }


def _feature(account_id: str, row: AccountFeature | None, name: str) -> schemas.Feature:
    return schemas.Feature(**feature_data(account_id, row, name))


def _known(name: str) -> None:
    if name not in KNOWN_FEATURES:
        raise NotFound(f"Unknown feature '{name}'; known: {', '.join(sorted(KNOWN_FEATURES))}")


async def read_features(
    *, db: Database, enterprise_id: str, account_id: str
) -> list[dict[str, Any]]:
    """Every known feature of the enterprise's account as plain data, from one raw
    read; another enterprise's account, or none, is the same 404 as ``_own_account``'s."""
    rows = await repository.feature_records(
        db=db, enterprise_id=enterprise_id, account_id=account_id
    )
    if rows is None:
        raise NotFound()
    enabled = {row.feature: row for row in rows}
    return [feature_data(account_id, enabled.get(name), name) for name in sorted(KNOWN_FEATURES)]


async def enable_feature(
    *, session: AsyncSession, enterprise_id: str, account_id: str, name: str
) -> schemas.Feature:
    _known(name)
    await _own_account(session=session, enterprise_id=enterprise_id, account_id=account_id)
    created = await repository.enable_feature(
        session=session, account_id=account_id, name=name, now=utcnow()
    )
    return schemas.Feature(feature=name, enabled=True, account_id=account_id, created=created)


async def disable_feature(
    *, session: AsyncSession, enterprise_id: str, account_id: str, name: str
) -> schemas.Feature:
    _known(name)
    await _own_account(session=session, enterprise_id=enterprise_id, account_id=account_id)
    await repository.disable_feature(session=session, account_id=account_id, name=name)
    return _feature(account_id, None, name)


async def enabled_features(*, db: Database, account_id: str) -> frozenset[str]:
    """For other domains' raw reads: the beta features enabled for this account."""
    return await repository.feature_names(db=db, account_id=account_id)


async def has_feature(*, session: AsyncSession, account_id: str, name: str) -> bool:
    """For other domains: is a beta feature enabled for this account?"""
    return await repository.feature(session=session, account_id=account_id, name=name) is not None

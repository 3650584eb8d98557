"""Signing in and out of the web app. No HTTP here: the endpoints set the cookies.

A session is a random cookie value (kept as a keyed hash) with a CSRF token (also kept
as a keyed hash) that unsafe requests must echo in X-CSRF-Token; it ends after
``session_idle_s`` without a request or ``session_max_age_s`` after sign-in, when the
person signs out, or when the user or key it belongs to is deleted (docs/people.md).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.app_state import AppState
from tidegate.auth import repository as auth_repository
from tidegate.auth.dependencies import CSRF_DOMAIN, SESSION_DOMAIN
from tidegate.auth.passwords import verify_password
from tidegate.auth.principal import Principal
from tidegate.auth.roles import Role
from tidegate.auth.secrets import MANAGEMENT_DOMAIN, hash_secret, same_secret
from tidegate.clock import now_ms
from tidegate.db.engine import Database, RawQuery
from tidegate.enterprise import service as enterprise_service
from tidegate.errors import Forbidden, Unauthorized
from tidegate.models import Account, Membership, User
from tidegate.sessions import repository, schemas, signin_policy
from tidegate.users import repository as users_repository

OWNER = Role.OWNER.label


@dataclass(frozen=True, slots=True)
class NewSession:
    token: str
    info: schemas.SessionInfo


def session_account_data(account: Account | Any, role: str) -> dict[str, Any]:
    """An account a credential may act in as plain data (``SessionAccount``'s fields),
    from the ORM object or a raw record holding ``id`` and ``company``."""
    return {"id": account.id, "name": account.company, "role": role}


def _account(account: Account, role: str) -> schemas.SessionAccount:
    return schemas.SessionAccount(**session_account_data(account, role))


async def _accounts_of_user(session: AsyncSession, user_id: str) -> list[schemas.SessionAccount]:
    return [
        _account(account, role)
        for account, role in await users_repository.memberships_of(session=session, user_id=user_id)
    ]


async def _accounts_of_key(
    session: AsyncSession, *, kind: str, enterprise_id: str | None, account_id: str | None
) -> list[schemas.SessionAccount]:
    if kind == "service":
        own = await repository.account(session=session, account_id=account_id or "")
        return [] if own is None else [_account(own, OWNER)]
    children = await repository.enterprise_accounts(
        session=session, enterprise_id=enterprise_id or ""
    )
    return [_account(child, OWNER) for child in children]


# accounts_of's three reads as raw records: a person's memberships (users_repository.
# memberships_of), a service key's account, an enterprise's accounts (repository's).
_USER_ACCOUNTS = RawQuery(
    select(Account.id, Account.company, Membership.role)
    .join(Membership, Membership.account_id == Account.id)
    .where(Membership.user_id == bindparam("user_id"))
    .order_by(Membership.created_at, Account.id)
    .limit(500)
)
_KEY_ACCOUNT = RawQuery(
    select(Account.id, Account.company).where(Account.id == bindparam("account_id"))
)
_ENTERPRISE_ACCOUNTS = RawQuery(
    select(Account.id, Account.company)
    .where(Account.enterprise_id == bindparam("enterprise_id"))
    .order_by(Account.created_at, Account.id)
    .limit(500)
)


async def read_accounts_of(*, db: Database, principal: Principal) -> list[dict[str, Any]]:
    """``accounts_of`` as plain data (``session_account_data``), from one raw read."""
    if principal.user_id is not None:
        rows = await db.fetch_records(_USER_ACCOUNTS, {"user_id": principal.user_id})
        return [session_account_data(row, row.role) for row in rows]
    if principal.kind == "service":
        params = {"account_id": principal.account_id or ""}
        rows = await db.fetch_records(_KEY_ACCOUNT, params)
    else:
        params = {"enterprise_id": principal.enterprise_id or ""}
        rows = await db.fetch_records(_ENTERPRISE_ACCOUNTS, params)
    return [session_account_data(row, OWNER) for row in rows]


def session_info_data(principal: Principal, accounts: list[dict[str, Any]]) -> dict[str, Any]:
    """``schemas.SessionInfo`` as plain data (its fields in its order), from the accounts
    the credential may act in (``session_account_data``); no CSRF token (only sign-in's
    answer carries one)."""
    return {
        "kind": principal.kind,
        "email": principal.email,
        "account_id": principal.account_id,
        "role": principal.role.label if principal.account_id is not None else None,
        "accounts": accounts,
        "csrf_token": None,
    }


async def read_whoami(*, db: Database, principal: Principal) -> dict[str, Any]:
    """``GET /v1/auth/session``'s document, from one raw read (the web app asks it on
    every page load)."""
    return session_info_data(principal, await read_accounts_of(db=db, principal=principal))


async def whoami(*, session: AsyncSession, principal: Principal) -> schemas.SessionInfo:
    accounts = await accounts_of(session=session, principal=principal)
    return schemas.SessionInfo.model_validate(
        session_info_data(principal, [account.model_dump() for account in accounts])
    )


async def _open(
    *,
    session: AsyncSession,
    state: AppState,
    info: schemas.SessionInfo,
    user_id: str | None,
    key_id: str | None,
) -> NewSession:
    token, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    now = now_ms()
    await repository.create(
        session=session,
        token_hash=hash_secret(token, domain=SESSION_DOMAIN),
        csrf_hash=hash_secret(csrf, domain=CSRF_DOMAIN),
        user_id=user_id,
        key_id=key_id,
        account_id=info.account_id,
        now_ms=now,
        expires_ms=now + int(state.settings.session_max_age_s * 1000),
    )
    return NewSession(token=token, info=info.model_copy(update={"csrf_token": csrf}))


async def check_password(
    *, session: AsyncSession, state: AppState, email: str, password: str, address: str
) -> User:
    """The user whose password this is; failures counted per (e-mail, address), per
    address and per e-mail (tidegate.sessions.signin_policy), for the web app's sign-in
    and logdna-cli's ``POST /login`` alike."""
    await signin_policy.before_password(state, email=email, address=address)
    # Read outside the request's transaction: the slow hash must not hold SQLite's write
    # lock (the request's session has run no statement yet, so it holds nothing).
    async with state.db.read_sessions() as read:
        user = await users_repository.user_by_email(session=read, email=email.strip().lower())
    if not await verify_password(user.password_hash if user else None, password) or user is None:
        await signin_policy.password_failed(state, email=email, address=address)
        raise Unauthorized("Wrong e-mail or password")
    await signin_policy.password_succeeded(state, email=email, address=address)
    return user


async def accounts_of(
    *, session: AsyncSession, principal: Principal
) -> list[schemas.SessionAccount]:
    """The accounts a credential may act in, with its role in each."""
    if principal.user_id is not None:
        return await _accounts_of_user(session, principal.user_id)
    return await _accounts_of_key(
        session,
        kind=principal.kind,
        enterprise_id=principal.enterprise_id,
        account_id=principal.account_id,
    )


async def sign_in_with_password(
    *, session: AsyncSession, state: AppState, email: str, password: str, address: str
) -> NewSession:
    user = await check_password(
        session=session, state=state, email=email, password=password, address=address
    )
    accounts = await _accounts_of_user(session, user.id)
    if not accounts:
        raise Forbidden("This user is not a member of any account")
    first = accounts[0]
    info = schemas.SessionInfo(
        kind="user", email=user.email, account_id=first.id, role=first.role, accounts=accounts
    )
    return await _open(session=session, state=state, info=info, user_id=user.id, key_id=None)


async def sign_in_with_key(
    *, session: AsyncSession, state: AppState, key: str, account_id: str | None, address: str
) -> NewSession:
    await signin_policy.before_key(state, address=address)
    key_hash = hash_secret(key.strip(), domain=MANAGEMENT_DOMAIN)
    found = await auth_repository.key_by_hash(db=state.db, key_hash=key_hash)
    if found is None or not same_secret(found.key_hash, key_hash):
        await signin_policy.key_failed(state, address=address)
        raise Unauthorized("Invalid key")
    if found.kind not in ("service", "enterprise"):
        raise Forbidden("Sign in with a service key or an enterprise key")
    if found.kind == "service" and found.account_status == "deactivated":
        raise Forbidden("Account not found or inactive")
    accounts = await _accounts_of_key(
        session,
        kind=found.kind,
        enterprise_id=found.enterprise_id,
        account_id=found.account_id,
    )
    if found.kind == "service":
        chosen = found.account_id
        if account_id is not None and account_id != chosen:
            raise Forbidden("A service key acts only as its own account")
    else:
        chosen = account_id if account_id is not None else (accounts[0].id if accounts else None)
        if chosen is not None and chosen not in {a.id for a in accounts}:
            raise Forbidden("account_id names no account of this enterprise")
    info = schemas.SessionInfo(
        kind="service" if found.kind == "service" else "enterprise",
        account_id=chosen,
        role=OWNER if chosen is not None else None,
        accounts=accounts,
    )
    return await _open(session=session, state=state, info=info, user_id=None, key_id=found.id)


async def switch_account(
    *,
    session: AsyncSession,
    session_record: auth_repository.SessionRecord,
    key: auth_repository.KeyRecord | None,
    account_id: str,
) -> None:
    """Moves the session to another of its accounts (403 for any other)."""
    if session_record.user_id is not None:
        member = await users_repository.membership(
            session=session, user_id=session_record.user_id, account_id=account_id
        )
        allowed = member is not None
    else:
        accounts = (
            []
            if key is None
            else await _accounts_of_key(
                session, kind=key.kind, enterprise_id=key.enterprise_id, account_id=key.account_id
            )
        )
        allowed = any(account.id == account_id for account in accounts)
    if not allowed:
        raise Forbidden("You have no such account")
    await repository.switch_account(
        session=session, session_id=session_record.id, account_id=account_id
    )


async def sign_out(*, session: AsyncSession, session_id: str) -> None:
    await repository.delete_session(session=session, session_id=session_id)


async def read_accounts_in_detail(*, db: Database, principal: Principal) -> list[dict[str, Any]]:
    """The spec's Account (``enterprise_service.account_data``) for each account the
    credential may act in (at most 200; those ``read_accounts_of`` lists), from raw
    reads: mzm asks it for every command. A person's accounts are one read, not one per
    account."""
    if principal.user_id is not None:
        return await enterprise_service.read_member_accounts(db=db, user_id=principal.user_id)
    if principal.kind == "service":
        account = await enterprise_service.read_account_by_id(
            db=db, account_id=principal.account_id or ""
        )
        return [] if account is None else [account]
    # An enterprise key, acting for one of its accounts or not: every account it holds.
    enterprise_id = principal.enterprise_id or ""
    return (await enterprise_service.read_account_list(db=db, enterprise_id=enterprise_id))[:200]

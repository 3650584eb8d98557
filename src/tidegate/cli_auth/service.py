"""logdna-cli's sign-in: the user's CLI token, made on first login and sealed under the
server secret (verifying a signature needs it in clear). No HTTP here."""

from __future__ import annotations

import secrets
from typing import Any

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.app_state import AppState
from tidegate.auth.principal import Principal
from tidegate.cli_auth import schemas
from tidegate.db.engine import Database
from tidegate.errors import Forbidden
from tidegate.models import User
from tidegate.sessions import service as sessions


async def login(
    *, session: AsyncSession, state: AppState, email: str, password: str, address: str
) -> schemas.Login:
    user = await sessions.check_password(
        session=session, state=state, email=email, password=password, address=address
    )
    token = state.sealer.open(user.cli_token_sealed) if user.cli_token_sealed else None
    if token is None:
        # One token per user, shared by their machines; a new password replaces it.
        token = secrets.token_hex(20)
        await session.execute(
            update(User).where(User.id == user.id).values(cli_token_sealed=state.sealer.seal(token))
        )
    accounts = await sessions.accounts_of(
        session=session,
        principal=Principal(None, "user", "", None, user_id=user.id, email=user.email),
    )
    if not accounts:
        raise Forbidden("This user is not a member of any account")
    return schemas.Login(
        email=user.email,
        token=token,
        accounts=[account.id for account in accounts],
        keys=[],
        servicekeys=[],
    )


def info_data(principal: Principal, accounts: list[dict[str, Any]]) -> dict[str, Any]:
    """``GET /info``'s document (``schemas.Info``) as plain data, from the accounts the
    credential may act in (``sessions.session_account_data``)."""
    current = next((a for a in accounts if a["id"] == principal.account_id), None)
    return {
        "email": principal.email,
        "account_id": principal.account_id,
        "account": current["name"] if current else None,
        "role": principal.role.label if principal.account_id else None,
        "accounts": [account["id"] for account in accounts],
    }


def org_data(account: dict[str, Any]) -> dict[str, Any]:
    """An account of ``GET /orgs`` (``schemas.Org``) as plain data."""
    return {
        "id": account["id"],
        "name": account["name"],
        "role": account["role"],
        "servicekeys": [],
    }


async def read_info(*, db: Database, principal: Principal) -> dict[str, Any]:
    return info_data(principal, await sessions.read_accounts_of(db=db, principal=principal))


async def read_orgs(*, db: Database, principal: Principal) -> list[dict[str, Any]]:
    accounts = await sessions.read_accounts_of(db=db, principal=principal)
    return [org_data(account) for account in accounts]

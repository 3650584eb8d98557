"""Ingestion suspensions. No HTTP here.

Suspending takes two steps, as on the platform, so that one stray request cannot cut an
account off: ``request_suspension`` hands out a token (a uuid4, kept only as a keyed
hash, valid ``TOKEN_TTL`` and once), ``confirm_suspension`` with it suspends. While
suspended, the ingestion key lookup (tidegate.ingest.repository, the same single query
that reads the key and the account's status) sees ``ingestion_suspended_at`` and
ingestion answers 403 without reading the body: nothing is stored, counted or tailed.
Every worker reads it on its next request, so a suspension and a resume take effect at
once everywhere.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.auth.secrets import hash_secret, same_secret
from tidegate.clock import epoch_ms_of
from tidegate.db.engine import Database, RawQuery
from tidegate.errors import BadRequest, NotFound
from tidegate.models import Account
from tidegate.models.base import utcnow
from tidegate.suspensions import repository, schemas

TOKEN_DOMAIN = "tidegate:ingestion-suspend-token"
# Long enough to read the answer and confirm by hand, short enough to be a confirmation.
TOKEN_TTL = timedelta(minutes=10)
INVALID_TOKEN = (
    "token: unknown, used or expired; ask POST /v1/config/ingestion/suspend for a new one"
)


def status_data(since: datetime | None) -> dict[str, Any]:
    """The ingestion status's document as plain data (api/raw_json.py), from the
    account's ``ingestion_suspended_at``."""
    return {
        "status": "suspended" if since is not None else "active",
        "suspended": since is not None,
        "suspended_at": None if since is None else epoch_ms_of(since),
    }


def _status(account: Account) -> schemas.IngestionStatus:
    return schemas.IngestionStatus(**status_data(account.ingestion_suspended_at))


_SUSPENDED_AT = RawQuery(
    select(Account.ingestion_suspended_at).where(Account.id == bindparam("account_id"))
)


async def _account(*, session: AsyncSession, account_id: str, for_update: bool = False) -> Account:
    account = await repository.account_of(
        session=session, account_id=account_id, for_update=for_update
    )
    if account is None:
        raise NotFound()
    return account


async def read_status(*, db: Database, account_id: str) -> dict[str, Any]:
    """The account's ingestion status as plain data, from one raw read."""
    rows = await db.fetch_records(_SUSPENDED_AT, {"account_id": account_id})
    if not rows:
        raise NotFound()
    return status_data(rows[0].ingestion_suspended_at)


async def request_suspension(
    *, session: AsyncSession, account_id: str, now: datetime | None = None
) -> schemas.SuspendToken:
    """A new confirmation token; it replaces any earlier one."""
    account = await _account(session=session, account_id=account_id, for_update=True)
    token = str(uuid.uuid4())
    account.suspend_token_hash = hash_secret(token, domain=TOKEN_DOMAIN)
    account.suspend_token_expires_at = (now or utcnow()) + TOKEN_TTL
    await session.flush()
    return schemas.SuspendToken(token=token)


async def confirm_suspension(
    *, session: AsyncSession, account_id: str, token: str, now: datetime | None = None
) -> schemas.IngestionStatus:
    account = await _account(session=session, account_id=account_id, for_update=True)
    moment = now or utcnow()
    expected, expires = account.suspend_token_hash, account.suspend_token_expires_at
    presented = hash_secret(token.strip(), domain=TOKEN_DOMAIN)
    if expected is None or expires is None or expires <= moment:
        raise BadRequest(INVALID_TOKEN)
    if not same_secret(expected, presented):
        raise BadRequest(INVALID_TOKEN)
    account.suspend_token_hash = None
    account.suspend_token_expires_at = None
    if account.ingestion_suspended_at is None:
        account.ingestion_suspended_at = moment
    await session.flush()
    return _status(account)


async def resume(*, session: AsyncSession, account_id: str) -> schemas.IngestionStatus:
    """Ends a suspension (and forgets a pending token); resuming an active account is a
    no-op that answers its status."""
    account = await _account(session=session, account_id=account_id, for_update=True)
    account.ingestion_suspended_at = None
    account.suspend_token_hash = None
    account.suspend_token_expires_at = None
    await session.flush()
    return _status(account)

"""Credential lookups (queries only).

These run on every authenticated request, so they are prebuilt Core statements run
through ``Database.fetch`` (the raw driver on SQLite) and return plain rows. They read
through the read engine, outside the request's transaction: credentials are checked and
the rate limit applied before a write transaction (on SQLite, the one write lock) is
opened. Nothing is cached, so a deleted key or a deactivated account is refused by the
very next request in every worker.
"""

from __future__ import annotations

from typing import NamedTuple

from sqlalchemy import bindparam, select

from tidegate.db.engine import Database, RawQuery
from tidegate.models import Account, ApiKey

_keys = ApiKey.__table__
_accounts = Account.__table__


class KeyRecord(NamedTuple):
    id: str
    kind: str
    enterprise_id: str | None
    key_hash: str
    account_id: str | None
    account_enterprise_id: str | None
    account_status: str | None


_KEY_BY_HASH = RawQuery(
    select(
        _keys.c.id,
        _keys.c.kind,
        _keys.c.enterprise_id,
        _keys.c.key_hash,
        _accounts.c.id,
        _accounts.c.enterprise_id,
        _accounts.c.status,
    )
    .select_from(_keys.outerjoin(_accounts, _accounts.c.id == _keys.c.account_id))
    .where(_keys.c.key_hash == bindparam("key_hash"))
)

_CHILD_ACCOUNT = RawQuery(
    select(_accounts.c.id).where(
        _accounts.c.id == bindparam("account_id"),
        _accounts.c.enterprise_id == bindparam("enterprise_id"),
    )
)


async def key_by_hash(*, db: Database, key_hash: str) -> KeyRecord | None:
    rows = await db.fetch(_KEY_BY_HASH, {"key_hash": key_hash})
    return KeyRecord(*rows[0]) if rows else None


async def child_account_id(*, db: Database, enterprise_id: str, account_id: str) -> str | None:
    rows = await db.fetch(
        _CHILD_ACCOUNT, {"account_id": account_id, "enterprise_id": enterprise_id}
    )
    return str(rows[0][0]) if rows else None

"""Credential lookups (queries only).

These run on every authenticated request, so they are prebuilt Core statements with
bind parameters (compiled and cache-keyed once) returning plain rows, not ORM objects.
"""

from __future__ import annotations

from typing import NamedTuple

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

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


_KEY_BY_HASH = (
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

_CHILD_ACCOUNT = select(_accounts.c.id).where(
    _accounts.c.id == bindparam("account_id"),
    _accounts.c.enterprise_id == bindparam("enterprise_id"),
)


async def key_by_hash(*, session: AsyncSession, key_hash: str) -> KeyRecord | None:
    row = (await session.execute(_KEY_BY_HASH, {"key_hash": key_hash})).first()
    return None if row is None else KeyRecord(*row)


async def child_account_id(
    *, session: AsyncSession, enterprise_id: str, account_id: str
) -> str | None:
    row = (
        await session.execute(
            _CHILD_ACCOUNT, {"account_id": account_id, "enterprise_id": enterprise_id}
        )
    ).first()
    return None if row is None else str(row[0])

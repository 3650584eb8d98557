"""The one query a live tail stream repeats while it is open: may its credential still
read the account? (Queries only; the stream decides what to do with the answer.)

A stream is authenticated once, when it opens, and may then stay open for hours. Keys
are deleted and accounts deactivated in the database, by any worker on any host, so the
stream asks the database again every few seconds: two primary-key lookups in one
statement, cheap enough to repeat for every open stream.
"""

from __future__ import annotations

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.auth.principal import Principal
from tidegate.models import Account, ApiKey, Membership, UserSession

SCOPE_CHANGED = "Your groups' access scope changed; reconnect to tail within it"
MAKER_LEFT = "The person who made this key is no longer a member of its account"
LEFT = "No longer a member of the account"
ROLE_LOWERED = "The role this stream was opened with is no longer held; reconnect"

_keys = ApiKey.__table__
_accounts = Account.__table__
_memberships = Membership.__table__
_sessions = UserSession.__table__

_MEMBERSHIP = (
    select(_memberships.c.role, _accounts.c.status)
    .select_from(_memberships.join(_accounts, _accounts.c.id == _memberships.c.account_id))
    .where(
        _memberships.c.user_id == bindparam("user_id"),
        _memberships.c.account_id == bindparam("account_id"),
    )
)
_SESSION_ALIVE = select(_sessions.c.expires_ms).where(_sessions.c.id == bindparam("session_id"))

_KEY_AND_ACCOUNT = (
    select(
        _keys.c.kind,
        _keys.c.enterprise_id,
        _keys.c.account_id,
        _accounts.c.id,
        _accounts.c.enterprise_id,
        _accounts.c.status,
    )
    .select_from(_keys.outerjoin(_accounts, _accounts.c.id == bindparam("account_id")))
    .where(_keys.c.id == bindparam("key_id"))
)


async def revoked_reason(*, session: AsyncSession, key_id: str, account_id: str) -> str | None:
    """Why the key ``key_id`` may no longer read ``account_id``, or None while it may.

    The same rules as authentication: a service key reads its own account; an
    enterprise key reads (by delegation) an account of its enterprise; the account must
    not be deactivated.
    """
    row = (
        await session.execute(_KEY_AND_ACCOUNT, {"key_id": key_id, "account_id": account_id})
    ).first()
    if row is None:
        return "The key was deleted"
    kind, key_enterprise, key_account, found_account, account_enterprise, status = row
    if found_account is None:
        return "The account no longer exists"
    if kind == "service" and key_account != account_id:
        return "The key no longer belongs to the account"
    if kind == "enterprise" and key_enterprise != account_enterprise:
        return "The account no longer belongs to the key's enterprise"
    if kind not in ("service", "enterprise"):
        return "The key cannot read the account"
    if status == "deactivated":
        return "The account was deactivated"
    return None


async def principal_revoked_reason(
    *, session: AsyncSession, principal: Principal, account_id: str
) -> str | None:
    """``revoked_reason`` for any credential: a key, a person (still a member of an
    active account), and the browser session it came with (not signed out)."""
    if principal.session_id is not None:
        alive = await session.scalar(_SESSION_ALIVE, {"session_id": principal.session_id})
        if alive is None:
            return "The session has ended"
    if principal.user_id is None:
        assert principal.key_id is not None
        return await revoked_reason(session=session, key_id=principal.key_id, account_id=account_id)
    row = (
        await session.execute(_MEMBERSHIP, {"user_id": principal.user_id, "account_id": account_id})
    ).first()
    if row is None:
        return LEFT
    if row[1] == "deactivated":
        return "The account was deactivated"
    return None

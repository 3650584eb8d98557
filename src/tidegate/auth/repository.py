"""Credential lookups (queries only).

These run on every authenticated request, so they are prebuilt Core statements run
through ``Database.fetch`` (the raw driver on SQLite) and return plain rows. They read
through the read engine, outside the request's transaction: credentials are checked and
the rate limit applied before a write transaction (on SQLite, the one write lock) is
opened. Nothing is cached, so a deleted key or a deactivated account is refused by the
very next request in every worker.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import orjson
from sqlalchemy import bindparam, select

from tidegate.auth.scope import AccessScope, GroupScope
from tidegate.db.engine import Database, RawQuery
from tidegate.models import (
    Account,
    ApiKey,
    Group,
    GroupMember,
    Membership,
    User,
    UserSession,
)

_keys = ApiKey.__table__
_accounts = Account.__table__
_users = User.__table__
_memberships = Membership.__table__
_sessions = UserSession.__table__
_groups = Group.__table__
_group_members = GroupMember.__table__


class KeyRecord(NamedTuple):
    id: str
    kind: str
    enterprise_id: str | None
    key_hash: str
    account_id: str | None
    account_enterprise_id: str | None
    account_status: str | None
    made_by: str | None


# A key with its account's columns (a service key's; none for an enterprise key).
_KEY_WITH_ACCOUNT = select(
    _keys.c.id,
    _keys.c.kind,
    _keys.c.enterprise_id,
    _keys.c.key_hash,
    _accounts.c.id,
    _accounts.c.enterprise_id,
    _accounts.c.status,
    _keys.c.made_by,
).select_from(_keys.outerjoin(_accounts, _accounts.c.id == _keys.c.account_id))
_KEY_BY_HASH = RawQuery(_KEY_WITH_ACCOUNT.where(_keys.c.key_hash == bindparam("key_hash")))
# A browser session opened with a key refers to it by id.
_KEY_BY_ID = RawQuery(_KEY_WITH_ACCOUNT.where(_keys.c.id == bindparam("key_id")))

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


async def key_by_id(*, db: Database, key_id: str) -> KeyRecord | None:
    rows = await db.fetch(_KEY_BY_ID, {"key_id": key_id})
    return KeyRecord(*rows[0]) if rows else None


class SessionRecord(NamedTuple):
    id: str
    csrf_hash: str
    user_id: str | None
    key_id: str | None
    account_id: str | None
    last_seen_ms: int
    expires_ms: int


_SESSION_BY_HASH = RawQuery(
    select(
        _sessions.c.id,
        _sessions.c.csrf_hash,
        _sessions.c.user_id,
        _sessions.c.key_id,
        _sessions.c.account_id,
        _sessions.c.last_seen_ms,
        _sessions.c.expires_ms,
    ).where(_sessions.c.token_hash == bindparam("token_hash"))
)


async def session_by_hash(*, db: Database, token_hash: str) -> SessionRecord | None:
    rows = await db.fetch(_SESSION_BY_HASH, {"token_hash": token_hash})
    return SessionRecord(*rows[0]) if rows else None


class UserRecord(NamedTuple):
    id: str
    email: str
    cli_token_sealed: str | None


_USER_BY_EMAIL = RawQuery(
    select(_users.c.id, _users.c.email, _users.c.cli_token_sealed).where(
        _users.c.email == bindparam("email")
    )
)
# Whoever in an account can sign CLI queries (logdna-cli's search leaves out the e-mail).
_SIGNERS_OF_ACCOUNT = RawQuery(
    select(_users.c.id, _users.c.email, _users.c.cli_token_sealed)
    .select_from(_users.join(_memberships, _memberships.c.user_id == _users.c.id))
    .where(
        _memberships.c.account_id == bindparam("account_id"),
        _users.c.cli_token_sealed.is_not(None),
    )
    .limit(1000)
)


async def user_by_email(*, db: Database, email: str) -> UserRecord | None:
    rows = await db.fetch(_USER_BY_EMAIL, {"email": email})
    return UserRecord(*rows[0]) if rows else None


async def signers_of_account(*, db: Database, account_id: str) -> list[UserRecord]:
    return [
        UserRecord(*row) for row in await db.fetch(_SIGNERS_OF_ACCOUNT, {"account_id": account_id})
    ]


class MemberRecord(NamedTuple):
    email: str
    role: str | None
    account_enterprise_id: str | None
    account_status: str | None


_MEMBER = RawQuery(
    select(_users.c.email, _memberships.c.role, _accounts.c.enterprise_id, _accounts.c.status)
    .select_from(
        _users.outerjoin(
            _memberships,
            (_memberships.c.user_id == _users.c.id)
            & (_memberships.c.account_id == bindparam("account_id")),
        ).outerjoin(_accounts, _accounts.c.id == _memberships.c.account_id)
    )
    .where(_users.c.id == bindparam("user_id"))
)
_SCOPES = RawQuery(
    select(_groups.c.apps, _groups.c.hosts, _groups.c.query)
    .select_from(_group_members.join(_groups, _groups.c.id == _group_members.c.group_id))
    .where(
        _group_members.c.user_id == bindparam("user_id"),
        _groups.c.account_id == bindparam("account_id"),
    )
    # One order, so that the same groups read twice make equal scopes (a live tail
    # compares the scope it opened with against the current one).
    .order_by(_groups.c.id)
)


async def member(*, db: Database, user_id: str, account_id: str) -> MemberRecord | None:
    """The user (None when gone) with their role in the account (None when not a member)."""
    rows = await db.fetch(_MEMBER, {"user_id": user_id, "account_id": account_id})
    return MemberRecord(*rows[0]) if rows else None


def _json_list(value: Any) -> list[str]:
    if isinstance(value, str | bytes):
        value = orjson.loads(value)
    return [str(item) for item in value or []]


async def access_scope(*, db: Database, user_id: str, account_id: str) -> AccessScope | None:
    """The lines the person may see in the account now (None: all of them)."""
    rows = await db.fetch(_SCOPES, {"user_id": user_id, "account_id": account_id})
    return AccessScope.of(
        [
            GroupScope(tuple(_json_list(apps)), tuple(_json_list(hosts)), query)
            for apps, hosts, query in rows
        ]
    )

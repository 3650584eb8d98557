"""A person's preferences: kept per user, whatever account they act in or browser they
use. Keys have none (docs/web.md, "Preferences"): a credential that is not a person is
refused with 403."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.auth.principal import Principal
from tidegate.db.engine import Database, RawQuery
from tidegate.errors import Forbidden
from tidegate.models import UserPreference
from tidegate.preferences import repository, schemas


def person_of(principal: Principal) -> str:
    """The user the preferences belong to; a key (or a browser signed in with one)
    has no person to keep them for."""
    if principal.user_id is None:
        raise Forbidden(
            "Preferences belong to a person: sign in with an e-mail and password "
            "(these credentials are a key)"
        )
    return principal.user_id


def preferences_data(row: UserPreference | Any | None) -> dict[str, Any]:
    """The preferences' document as plain data (api/raw_json.py), from the ORM object or
    a raw record of ``utc`` and ``query_history``; the defaults when never set (no row)."""
    if row is None:
        return {"utc": False, "query_history": []}
    return {"utc": row.utc, "query_history": list(row.query_history)[: schemas.MAX_QUERY_HISTORY]}


def _shown(row: UserPreference | None) -> schemas.Preferences:
    return schemas.Preferences(**preferences_data(row))


async def get(*, session: AsyncSession, user_id: str) -> schemas.Preferences:
    return _shown(await repository.of_user(session=session, user_id=user_id))


_OF_USER = RawQuery(
    select(UserPreference.utc, UserPreference.query_history).where(
        UserPreference.user_id == bindparam("user_id")
    )
)


async def read(*, db: Database, user_id: str) -> dict[str, Any]:
    """The person's preferences as plain data, from one raw read."""
    rows = await db.fetch_records(_OF_USER, {"user_id": user_id})
    return preferences_data(rows[0] if rows else None)


async def change(
    *, session: AsyncSession, user_id: str, changes: schemas.PreferencesChange
) -> schemas.Preferences:
    row = await repository.row_for_change(session=session, user_id=user_id)
    if changes.utc is not None:
        row.utc = changes.utc
    await session.flush()
    return _shown(row)


def with_query(history: list[str], query: str) -> list[str]:
    """``query`` first, once, then the others newest first, at most MAX_QUERY_HISTORY."""
    rest = [item for item in history if item != query]
    return [query, *rest][: schemas.MAX_QUERY_HISTORY]


async def remember_query(*, session: AsyncSession, user_id: str, query: str) -> schemas.Preferences:
    """A search the person ran. A blank query is not worth remembering; the one already
    newest is not written again."""
    text = query.strip()
    if not text:
        return await get(session=session, user_id=user_id)
    row = await repository.row_for_change(session=session, user_id=user_id)
    history = list(row.query_history)
    if history[:1] != [text]:
        row.query_history = with_query(history, text)
        await session.flush()
    return _shown(row)


async def forget_queries(*, session: AsyncSession, user_id: str) -> schemas.Preferences:
    row = await repository.row_for_change(session=session, user_id=user_id)
    row.query_history = []
    await session.flush()
    return _shown(row)

"""A person's preferences: kept per user, whatever account they act in or browser they
use. Keys have none (docs/web.md, "Preferences"): a credential that is not a person is
refused with 403."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
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


def _entry(item: Any) -> schemas.Search | None:
    """A stored history entry: a plain query (kept before ranges and filters were) or
    a search's fields. One that no longer reads is left out, not a 500."""
    if isinstance(item, str):
        return schemas.Search(query=item)
    try:
        return schemas.Search.model_validate(item)
    except ValidationError:
        return None


def _shown(row: UserPreference | Any | None) -> schemas.Preferences:
    """The preferences of the ORM object or a raw record of ``utc`` and
    ``query_history``; the defaults when never set (no row)."""
    if row is None:
        return schemas.Preferences()
    searches = [found for found in map(_entry, list(row.query_history)) if found is not None][
        : schemas.MAX_QUERY_HISTORY
    ]
    return schemas.Preferences(
        utc=row.utc, query_history=[item.query for item in searches], searches=searches
    )


def preferences_data(row: UserPreference | Any | None) -> dict[str, Any]:
    """The preferences' document as plain data (api/raw_json.py), as the response model
    writes it (``from`` and ``to`` by their aliases)."""
    return _shown(row).model_dump(mode="json", by_alias=True)


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


def _stored(item: Any) -> Any:
    """A stored entry as an object: a plain query is one without range or filters."""
    return {"query": item} if isinstance(item, str) else item


def _query_of(item: Any) -> Any:
    stored = _stored(item)
    return stored.get("query") if isinstance(stored, dict) else None


def with_search(history: list[Any], search: dict[str, Any]) -> list[Any]:
    """``search`` first, then the other queries' entries newest first (one entry per
    query: run again, a query moves to the front with the range and filters it ran
    with now), at most MAX_QUERY_HISTORY."""
    rest = [item for item in history if _query_of(item) != search["query"]]
    return [search, *rest][: schemas.MAX_QUERY_HISTORY]


async def remember_query(
    *, session: AsyncSession, user_id: str, search: schemas.RememberQuery
) -> schemas.Preferences:
    """A search the person ran, with its range and filters. A blank query is not worth
    remembering; the entry already newest is not written again."""
    text = search.query.strip()
    if not text:
        return await get(session=session, user_id=user_id)
    # Stored as the API shows it (``from``/``to``), leaving out what was not sent.
    entry = {
        **search.model_dump(by_alias=True, exclude_none=True, exclude={"query"}),
        "query": text,
    }
    entry = {key: value for key, value in entry.items() if value != []}
    row = await repository.row_for_change(session=session, user_id=user_id)
    history = list(row.query_history)
    if [_stored(item) for item in history[:1]] != [entry]:
        row.query_history = with_search(history, entry)
        await session.flush()
    return _shown(row)


async def forget_queries(*, session: AsyncSession, user_id: str) -> schemas.Preferences:
    row = await repository.row_for_change(session=session, user_id=user_id)
    row.query_history = []
    await session.flush()
    return _shown(row)

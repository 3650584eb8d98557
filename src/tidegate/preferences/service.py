"""A person's preferences: kept per user, whatever account they act in or browser they
use. Keys have none (docs/web.md, "Preferences"): a credential that is not a person is
refused with 403."""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError
from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.auth.principal import Principal
from tidegate.db.engine import Database, RawQuery
from tidegate.errors import Conflict, Forbidden, NotFound
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


# A search's document without a range or filters, in the model's order (``query`` last;
# tuples, which JSON writes as lists, so that no document shares a list to change).
_NO_RANGE: dict[str, Any] = {
    "range": None,
    "from": None,
    "to": None,
    "hosts": (),
    "apps": (),
    "levels": (),
    "fields": (),
}
_FILTERS = ("hosts", "apps", "levels", "fields")
_SEARCH_KEYS = frozenset([*_NO_RANGE, "query"])
_RELATIVE_RANGE = re.compile(schemas.RELATIVE_RANGE)


def _millis(value: Any) -> bool:
    return value is None or (type(value) is int and 0 <= value <= schemas.MAX_MILLIS)


def _as_written(item: dict[str, Any]) -> bool:
    """Whether ``item`` is a search as ``remember_query`` stores it, which the model
    reads unchanged: its fields only, each of its JSON type and within its bounds."""
    if not item.keys() <= _SEARCH_KEYS or type(item.get("query")) is not str:
        return False
    found = item.get("range")
    if found is not None and (type(found) is not str or not _RELATIVE_RANGE.fullmatch(found)):
        return False
    if not (_millis(item.get("from")) and _millis(item.get("to"))):
        return False
    for name in _FILTERS:
        values = item.get(name, ())
        if type(values) is not list:
            if values != ():  # absent: the default; null or another type: the model's
                return False
            continue
        if len(values) > schemas.MAX_FILTER_VALUES:
            return False
        for value in values:
            if type(value) is not str or not 0 < len(value) <= schemas.MAX_FILTER_VALUE_LENGTH:
                return False
    return True


def _search_data(item: Any) -> dict[str, Any] | None:
    """A stored history entry's document as ``schemas.Search`` writes it, built without
    the model for a plain query and a search as stored; anything else is the model's to
    read (or leave out: ``_entry``)."""
    if type(item) is str:
        return {**_NO_RANGE, "query": item}
    if type(item) is dict and _as_written(item):
        return {**_NO_RANGE, **item}
    found = _entry(item)
    return None if found is None else found.model_dump(mode="json", by_alias=True)


def _starred_data(item: Any) -> dict[str, Any] | None:
    """A stored starred search's document as ``schemas.StarredSearch`` writes it: the
    search, then its name. One whose name no longer reads is left out, as the model
    leaves it out."""
    if type(item) is not dict:
        found = _search_data(item)
        return None if found is None else {**found, "name": None}
    name = item.get("name")
    if name is not None and (type(name) is not str or len(name) > schemas.MAX_STARRED_NAME_LENGTH):
        return None
    found = _search_data({key: value for key, value in item.items() if key != "name"})
    return None if found is None else {**found, "name": name}


def preferences_data(row: UserPreference | Any | None) -> dict[str, Any]:
    """The preferences of the ORM object or a raw record of ``utc``, ``query_history``
    and ``starred`` as plain data (api/raw_json.py), as the response model writes it
    (``from`` and ``to`` by their aliases); the defaults when never set (no row)."""
    if row is None:
        return {"utc": False, "query_history": [], "searches": [], "starred": []}
    searches = [found for found in map(_search_data, list(row.query_history)) if found][
        : schemas.MAX_QUERY_HISTORY
    ]
    starred = [found for found in map(_starred_data, list(row.starred or ())) if found][
        : schemas.MAX_STARRED
    ]
    return {
        "utc": row.utc,
        "query_history": [search["query"] for search in searches],
        "searches": searches,
        "starred": starred,
    }


def _shown(row: UserPreference | Any | None) -> schemas.Preferences:
    """The writes' answer: ``preferences_data`` validated."""
    return schemas.Preferences.model_validate(preferences_data(row))


async def get(*, session: AsyncSession, user_id: str) -> schemas.Preferences:
    return _shown(await repository.of_user(session=session, user_id=user_id))


_OF_USER = RawQuery(
    select(UserPreference.utc, UserPreference.query_history, UserPreference.starred).where(
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


def _kept_entry(search: schemas.RememberQuery) -> dict[str, Any]:
    """A search as stored: as the API shows it (``from``/``to``), leaving out what was
    not sent, its query trimmed."""
    entry = {
        **search.model_dump(by_alias=True, exclude_none=True, exclude={"query"}),
        "query": search.query.strip(),
    }
    return {key: value for key, value in entry.items() if value != []}


def _without(entries: list[Any], query: str) -> list[Any] | None:
    """``entries`` without the one of ``query``, in their order; None when none is."""
    kept = [item for item in entries if _query_of(item) != query]
    return kept if len(kept) != len(entries) else None


async def remember_query(
    *, session: AsyncSession, user_id: str, search: schemas.RememberQuery
) -> schemas.Preferences:
    """A search the person ran, with its range and filters. A blank query is not worth
    remembering; the entry already newest is not written again."""
    entry = _kept_entry(search)
    if not entry["query"]:
        return await get(session=session, user_id=user_id)
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


async def forget_query(
    *, session: AsyncSession, user_id: str, forget: schemas.ForgetQuery
) -> schemas.Preferences:
    """The history without ``forget``'s query (trimmed, as it was remembered); the other
    entries keep their order. A query not in the history changes nothing."""
    row = await repository.row_for_change(session=session, user_id=user_id)
    kept = _without(row.query_history, forget.query.strip())
    if kept is not None:
        row.query_history = kept
        await session.flush()
    return _shown(row)


async def star_query(
    *, session: AsyncSession, user_id: str, search: schemas.StarQuery
) -> schemas.Preferences:
    """``search`` starred, first, with the range and filters it is starred with (a query
    starred already moves first with these, keeping its name). At most ``MAX_STARRED``:
    one more is a 409, and nothing changes. A blank query is not starred, as it is not
    remembered."""
    entry = _kept_entry(search)
    if not entry["query"]:
        return await get(session=session, user_id=user_id)
    row = await repository.row_for_change(session=session, user_id=user_id)
    starred = list(row.starred or ())
    others = [item for item in starred if _query_of(item) != entry["query"]]
    if len(others) >= schemas.MAX_STARRED:
        raise Conflict(f"At most {schemas.MAX_STARRED} searches can be starred: unstar one first")
    named = [_stored(item).get("name") for item in starred if _query_of(item) == entry["query"]]
    if named and type(named[0]) is str:
        entry["name"] = named[0]
    row.starred = [entry, *others]
    await session.flush()
    return _shown(row)


async def unstar_query(
    *, session: AsyncSession, user_id: str, forget: schemas.ForgetQuery
) -> schemas.Preferences:
    """The starred searches without ``forget``'s query (trimmed, as it was starred);
    the others keep their order, and the history is untouched."""
    row = await repository.row_for_change(session=session, user_id=user_id)
    kept = _without(row.starred or [], forget.query.strip())
    if kept is not None:
        row.starred = kept
        await session.flush()
    return _shown(row)


def _starred_at(starred: list[dict[str, Any]], query: str) -> int:
    """Where the starred search of ``query`` (trimmed, as it was starred) is; none is a 404."""
    query = query.strip()
    at = next((index for index, item in enumerate(starred) if _query_of(item) == query), None)
    if at is None:
        raise NotFound("No starred search has that query: star it first")
    return at


async def name_starred(
    *, session: AsyncSession, user_id: str, naming: schemas.NameStarred
) -> schemas.Preferences:
    """The starred search of ``naming``'s query named, or its name taken away (null or
    blank); the order is kept. None of that query is a 404."""
    row = await repository.row_for_change(session=session, user_id=user_id)
    starred = [_stored(item) for item in row.starred or ()]
    at = _starred_at(starred, naming.query)
    name = (naming.name or "").strip()
    renamed = {key: value for key, value in starred[at].items() if key != "name"}
    starred[at] = {**renamed, "name": name} if name else renamed
    row.starred = starred
    await session.flush()
    return _shown(row)


async def move_starred(
    *, session: AsyncSession, user_id: str, moving: schemas.MoveStarred
) -> schemas.Preferences:
    """The starred search of ``moving``'s query moved to its position (past the end: the
    last), the others in their order; what it carries is kept. None of that query is a
    404."""
    row = await repository.row_for_change(session=session, user_id=user_id)
    starred = [_stored(item) for item in row.starred or ()]
    entry = starred.pop(_starred_at(starred, moving.query))
    starred.insert(min(moving.position, len(starred)), entry)
    row.starred = starred
    await session.flush()
    return _shown(row)

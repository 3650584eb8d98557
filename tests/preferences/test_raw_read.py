"""GET /v1/auth/preferences answers from plain data (``service.preferences_data``), not
from the models: byte for byte what the response model answered, built from the row as
the ORM reads it, for histories of random searches as the writer stores them, plain
queries, and entries the model reads otherwise or leaves out. On SQLite and on
PostgreSQL."""

from __future__ import annotations

import random
from typing import Any, TypeVar

import orjson
import pytest
from pydantic import ValidationError
from tests.conftest import AppClient
from tests.preferences.test_endpoints import HISTORY, PATH, STAR, _person

from tidegate.db.engine import Database
from tidegate.models import UserPreference
from tidegate.preferences import schemas

# Entries the model reads otherwise than they are stored, or leaves out.
ODD: list[Any] = [
    {"query": "a", "range": "2h\n"},
    {"query": "a", "range": "1y"},
    {"query": "a", "range": 5},
    {"query": "a", "from": 1000.0, "to": 2000},
    {"query": "a", "from": "1000", "to": 2000},
    {"query": "a", "from": True},
    {"query": "a", "from": -1},
    {"query": "a", "to": schemas.MAX_MILLIS + 1},
    {"query": "a", "to": schemas.MAX_MILLIS},
    {"query": "a", "from": 5, "to": 1},
    {"query": "a", "hosts": None},
    {"query": "a", "hosts": "web"},
    {"query": "a", "hosts": [""]},
    {"query": "a", "hosts": ["h"] * (schemas.MAX_FILTER_VALUES + 1)},
    {"query": "a", "hosts": ["h"] * schemas.MAX_FILTER_VALUES},
    {"query": "a", "apps": ["x" * (schemas.MAX_FILTER_VALUE_LENGTH + 1)]},
    {"query": "a", "apps": ["x" * schemas.MAX_FILTER_VALUE_LENGTH]},
    {"query": "a", "levels": [1]},
    {"query": "a", "levels": []},
    {"query": "a", "fields": ["status", 5]},
    {"query": "a", "fields": None},
    {"query": "a", "extra": 1},
    {"query": "a", "range": None, "from": None, "to": None, "hosts": [], "apps": []},
    {"range": "2h"},
    {"query": 5},
    {"query": None},
    {"query": ""},
    {},
    5,
    None,
    True,
    1.5,
    ["a"],
    "",
]
# Starred searches' names the model reads otherwise, or leaves the search out for.
ODD_NAMES: list[Any] = [
    {"query": "a", "name": None},
    {"query": "a", "name": ""},
    {"query": "a", "name": 5},
    {"query": "a", "name": ["n"]},
    {"query": "a", "name": "n" * (schemas.MAX_STARRED_NAME_LENGTH + 1)},
    {"query": "a", "name": "n" * schemas.MAX_STARRED_NAME_LENGTH},
    {"query": "a", "name": "named", "extra": 1},
    {"query": "a", "name": "named", "range": 5},
    {"name": "named"},
]
SearchT = TypeVar("SearchT", bound=schemas.Search)
TEXT = ["a", "é", '"', "\\", " ", "東", "😀", "\u2028", "level:error", "app:web", "\n"]


def text(generator: random.Random) -> str:
    return "".join(generator.choice(TEXT) for _ in range(generator.randrange(1, 6)))


def as_written(generator: random.Random) -> Any:
    """A search as ``remember_query`` stores it (its fields in any order), or a plain
    query as kept before ranges were."""
    if generator.random() < 0.2:
        return text(generator)
    entry: dict[str, Any] = {"query": text(generator)}
    kind = generator.randrange(3)
    if kind == 1:
        entry["range"] = f"{generator.randrange(1, 999_999)}{generator.choice('smhdw')}"
    elif kind == 2:
        start = generator.randrange(schemas.MAX_MILLIS)
        entry.update({"from": start, "to": generator.randrange(start, schemas.MAX_MILLIS + 1)})
    for name in ("hosts", "apps", "levels", "fields"):
        if generator.random() < 0.4:
            entry[name] = [text(generator) for _ in range(generator.randrange(1, 4))]
    fields = list(entry.items())
    generator.shuffle(fields)
    return dict(fields)


def _read(items: list[Any], cap: int, model: type[SearchT]) -> list[SearchT]:
    searches = []
    for item in items:
        try:
            searches.append(
                model(query=item) if isinstance(item, str) else model.model_validate(item)
            )
        except ValidationError:
            continue
    return searches[:cap]


def model_answer(row: UserPreference) -> bytes:
    """The response model's answer for the ORM's row, as the read was built before."""
    searches = _read(row.query_history, schemas.MAX_QUERY_HISTORY, schemas.Search)
    model = schemas.Preferences(
        utc=row.utc,
        query_history=[item.query for item in searches],
        searches=searches,
        starred=_read(row.starred, schemas.MAX_STARRED, schemas.StarredSearch),
    )
    return orjson.dumps(model.model_dump(mode="json", by_alias=True))


async def test_the_raw_read_answers_the_models_bytes(client: AppClient) -> None:
    person, browser = await _person(client)
    generator = random.Random(19)
    database = Database.connect(client.database_url)
    try:
        for round_ in range(8):
            history = [as_written(generator) for _ in range(generator.randrange(40, 70))]
            starred = [as_written(generator) for _ in range(generator.randrange(0, 60))]
            for entry in starred:
                if isinstance(entry, dict) and generator.random() < 0.5:
                    entry["name"] = text(generator)
            if round_ % 2:
                history += ODD
                generator.shuffle(history)
                starred += ODD + ODD_NAMES
                generator.shuffle(starred)
            async with database.write_sessions() as session:
                await session.merge(
                    UserPreference(
                        user_id=person.user_id,
                        utc=bool(round_ % 3),
                        query_history=history,
                        starred=starred,
                    )
                )
                await session.commit()
            async with database.read_sessions() as session:
                row = await session.get(UserPreference, person.user_id)
                assert row is not None
                expected = model_answer(row)
            response = await client.get(PATH, headers=browser.cookies_only)
            assert response.status_code == 200, response.text
            assert response.content == expected, round_
    finally:
        await database.dispose()


async def test_a_read_of_what_the_writer_stores_builds_no_model(
    client: AppClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, browser = await _person(client)
    for body in (
        {"query": "level:error", "range": "2h", "hosts": ["web-1"], "fields": ["status"]},
        {"query": "app:api", "from": 1_000, "to": 61_000, "levels": ["warn", "error"]},
        {"query": "plain"},
    ):
        for path in (HISTORY, STAR):
            response = await client.post(path, json=body, headers=browser.headers)
            assert response.status_code == 200, response.text
    expected = (await client.get(PATH, headers=browser.cookies_only)).content
    assert len(orjson.loads(expected)["starred"]) == 3

    def built(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("a preferences model was built on the read")

    for model in (schemas.Search, schemas.Preferences):
        monkeypatch.setattr(model, "__init__", built)
        monkeypatch.setattr(model, "model_validate", built)
    response = await client.get(PATH, headers=browser.cookies_only)
    assert response.status_code == 200, response.text
    assert response.content == expected

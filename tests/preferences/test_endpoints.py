"""A person's preferences (/v1/auth/preferences): kept per person across sessions and
accounts, the query history newest first and bounded, refused to keys."""

from __future__ import annotations

import asyncio

import pytest
from tests.conftest import AppClient
from tests.factories import make_account, make_tenant
from tests.keys.factories import create_key, with_service_key
from tests.users.factories import Browser, Person, add_person, sign_in, sign_in_person

from tidegate.db.engine import Database
from tidegate.models import UserPreference
from tidegate.preferences.schemas import MAX_QUERY_HISTORY, MAX_STARRED, MAX_STARRED_NAME_LENGTH
from tidegate.search import MAX_QUERY_LENGTH

PATH = "/v1/auth/preferences"
HISTORY = PATH + "/query-history"
FORGET = HISTORY + "/forget"
STAR = PATH + "/starred"
UNSTAR = STAR + "/forget"
NAME = STAR + "/name"
MOVE = STAR + "/move"
# An entry remembered without a range or filters (a plain query, as kept at first).
NO_RANGE = {
    "range": None,
    "from": None,
    "to": None,
    "hosts": [],
    "apps": [],
    "levels": [],
    "fields": [],
}
# A starred search as starred (never named).
STARRED = {**NO_RANGE, "name": None}


async def _person(client: AppClient) -> tuple[Person, Browser]:
    account = await make_account(client, await make_tenant(client.database_url))
    person = await add_person(client.database_url, account_id=account.account_id, role="readonly")
    return person, await sign_in_person(client, person)


async def _remember(client: AppClient, browser: Browser, query: str) -> list[str]:
    response = await client.post(HISTORY, json={"query": query}, headers=browser.headers)
    assert response.status_code == 200, response.text
    history: list[str] = response.json()["query_history"]
    return history


async def test_defaults_until_changed_then_kept_for_the_person_in_another_browser(
    client: AppClient,
) -> None:
    person, browser = await _person(client)
    first = await client.get(PATH, headers=browser.cookies_only)
    assert first.status_code == 200, first.text
    assert first.json() == {"utc": False, "query_history": [], "searches": [], "starred": []}

    changed = await client.patch(PATH, json={"utc": True}, headers=browser.headers)
    assert changed.status_code == 200, changed.text
    assert changed.json() == {"utc": True, "query_history": [], "searches": [], "starred": []}
    # A field left out keeps its value.
    assert (await client.patch(PATH, json={}, headers=browser.headers)).json()["utc"] is True

    elsewhere = await sign_in_person(client, person)
    assert (await client.get(PATH, headers=elsewhere.cookies_only)).json()["utc"] is True
    back = await client.patch(PATH, json={"utc": False}, headers=elsewhere.headers)
    assert back.json()["utc"] is False
    assert (await client.get(PATH, headers=browser.cookies_only)).json()["utc"] is False

    # Another person (of the same account) has their own.
    _other, stranger = await _person(client)
    assert (await client.get(PATH, headers=stranger.cookies_only)).json()["utc"] is False
    await _remember(client, browser, "mine only")
    assert (await client.get(PATH, headers=stranger.cookies_only)).json()["query_history"] == []


async def test_the_same_preferences_in_every_account_of_the_person(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    first = await make_account(client, tenant)
    second = await make_account(client, tenant)
    person = await add_person(client.database_url, account_id=first.account_id)
    await add_person(
        client.database_url, account_id=second.account_id, role="readonly", email=person.email
    )
    browser = await sign_in_person(client, person)
    await client.patch(PATH, json={"utc": True}, headers=browser.headers)
    await _remember(client, browser, "level:error")
    switched = await client.put(
        "/v1/auth/session/account", json={"account_id": second.account_id}, headers=browser.headers
    )
    assert switched.status_code == 200, switched.text
    answer = (await client.get(PATH, headers=browser.cookies_only)).json()
    assert answer == {
        "utc": True,
        "query_history": ["level:error"],
        "searches": [{**NO_RANGE, "query": "level:error"}],
        "starred": [],
    }


async def test_query_history_is_distinct_newest_first_and_bounded(client: AppClient) -> None:
    _, browser = await _person(client)
    assert await _remember(client, browser, "error") == ["error"]
    assert await _remember(client, browser, "  app:web  ") == ["app:web", "error"]
    # Run again: moved to the front, not kept twice.
    assert await _remember(client, browser, "error") == ["error", "app:web"]
    assert await _remember(client, browser, "error") == ["error", "app:web"]
    # A blank query is not remembered.
    assert await _remember(client, browser, "   ") == ["error", "app:web"]
    for n in range(MAX_QUERY_HISTORY + 5):
        await _remember(client, browser, f"q{n}")
    history = (await client.get(PATH, headers=browser.cookies_only)).json()["query_history"]
    assert history == [f"q{n}" for n in range(MAX_QUERY_HISTORY + 4, 4, -1)]
    assert len(history) == MAX_QUERY_HISTORY

    forgotten = await client.delete(HISTORY, headers=browser.headers)
    assert forgotten.status_code == 200, forgotten.text
    assert forgotten.json()["query_history"] == []
    assert (await client.get(PATH, headers=browser.cookies_only)).json()["query_history"] == []


async def test_one_query_is_forgotten_and_the_others_keep_their_order(
    client: AppClient,
) -> None:
    person, browser = await _person(client)
    for query in ("one", "two", "three", "four"):
        await _remember(client, browser, query)
    kept = {"query": "two", "range": "2h", "hosts": ["web-1"]}
    await client.post(HISTORY, json=kept, headers=browser.headers)
    # ["two", "four", "three", "one"]: a middle one forgotten, spaces trimmed as kept.
    forgotten = await client.post(FORGET, json={"query": " four "}, headers=browser.headers)
    assert forgotten.status_code == 200, forgotten.text
    assert forgotten.json()["query_history"] == ["two", "three", "one"]
    assert forgotten.json()["searches"][0] == {**NO_RANGE, **kept}
    # Then the newest and the oldest; another browser of the person sees the same.
    for query in ("two", "one"):
        await client.post(FORGET, json={"query": query}, headers=browser.headers)
    elsewhere = await sign_in_person(client, person)
    answer = (await client.get(PATH, headers=elsewhere.cookies_only)).json()
    assert answer["query_history"] == ["three"]
    # A query not kept (or of another case) changes nothing; the last one leaves none.
    for query in ("Three", "never ran"):
        unchanged = await client.post(FORGET, json={"query": query}, headers=browser.headers)
        assert unchanged.status_code == 200, unchanged.text
        assert unchanged.json()["query_history"] == ["three"]
    last = await client.post(FORGET, json={"query": "three"}, headers=elsewhere.headers)
    assert last.json() == {"utc": False, "query_history": [], "searches": [], "starred": []}


async def test_forgetting_leaves_another_persons_history_alone(client: AppClient) -> None:
    _, browser = await _person(client)
    _, stranger = await _person(client)
    await _remember(client, browser, "shared words")
    await _remember(client, stranger, "shared words")
    await client.post(FORGET, json={"query": "shared words"}, headers=stranger.headers)
    assert (await client.get(PATH, headers=browser.cookies_only)).json()["query_history"] == [
        "shared words"
    ]


async def test_each_query_keeps_the_range_and_filters_it_last_ran_with(
    client: AppClient,
) -> None:
    _, browser = await _person(client)
    relative = {
        "query": "error",
        "range": "2h",
        "hosts": ["web-1", "Web-2"],
        "levels": ["warn"],
        "fields": ["status", "user.id"],
    }
    absolute = {"query": "app:api", "from": 1_000, "to": 61_000, "apps": ["api"]}
    for body in (relative, absolute):
        response = await client.post(HISTORY, json=body, headers=browser.headers)
        assert response.status_code == 200, response.text
    answer = (await client.get(PATH, headers=browser.cookies_only)).json()
    assert answer["query_history"] == ["app:api", "error"]
    assert answer["searches"] == [{**NO_RANGE, **absolute}, {**NO_RANGE, **relative}]
    # The same query run again with another range: one entry, the range of the latest.
    again = {"query": "error", "range": "15m"}
    answer = (await client.post(HISTORY, json=again, headers=browser.headers)).json()
    assert answer["query_history"] == ["error", "app:api"]
    assert answer["searches"][0] == {**NO_RANGE, **again}
    # The query alone (an older client): remembered without a range.
    answer = (await client.post(HISTORY, json={"query": "error"}, headers=browser.headers)).json()
    assert answer["searches"][0] == {**NO_RANGE, "query": "error"}


async def test_plain_queries_kept_before_ranges_still_load(client: AppClient) -> None:
    """Entries stored as plain queries (before the range and filters were kept) load as
    searches without a range; a new search is put before them."""
    person, browser = await _person(client)
    await _remember(client, browser, "first")
    database = Database.connect(client.database_url)
    try:
        async with database.write_sessions() as session:
            row = await session.get(UserPreference, person.user_id)
            assert row is not None
            row.query_history = ["old two", "old one"]
            await session.commit()
    finally:
        await database.dispose()
    answer = (await client.get(PATH, headers=browser.cookies_only)).json()
    assert answer["query_history"] == ["old two", "old one"]
    assert answer["searches"] == [{**NO_RANGE, "query": q} for q in ("old two", "old one")]
    body = {"query": "old one", "range": "1h"}
    answer = (await client.post(HISTORY, json=body, headers=browser.headers)).json()
    assert answer["query_history"] == ["old one", "old two"]
    assert answer["searches"] == [{**NO_RANGE, **body}, {**NO_RANGE, "query": "old two"}]


async def test_searches_at_once_each_add_their_query(client: AppClient) -> None:
    # Two tabs of one person searching at the same moment: neither query is lost.
    _, browser = await _person(client)
    queries = [f"tab{n}" for n in range(8)]
    answers = await asyncio.gather(
        *(client.post(HISTORY, json={"query": q}, headers=browser.headers) for q in queries)
    )
    assert [a.status_code for a in answers] == [200] * len(queries)
    history = (await client.get(PATH, headers=browser.cookies_only)).json()["query_history"]
    assert sorted(history) == queries


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("PATCH", PATH, {"utc": "yes"}),
        ("PATCH", PATH, {"utc": 1}),
        ("PATCH", PATH, {"theme": "dark"}),
        ("PATCH", PATH, {"query_history": ["a"]}),
        ("POST", HISTORY, {}),
        ("POST", HISTORY, {"query": ""}),
        ("POST", HISTORY, {"query": "x" * (MAX_QUERY_LENGTH + 1)}),
        ("POST", HISTORY, {"query": 5}),
        ("POST", HISTORY, {"query": "a", "range": "1y"}),
        ("POST", HISTORY, {"query": "a", "from": 1000}),
        ("POST", HISTORY, {"query": "a", "from": 2000, "to": 1000}),
        ("POST", HISTORY, {"query": "a", "range": "1h", "from": 1000, "to": 2000}),
        ("POST", HISTORY, {"query": "a", "from": "1000", "to": 2000}),
        ("POST", HISTORY, {"query": "a", "hosts": "web-1"}),
        ("POST", HISTORY, {"query": "a", "hosts": [""]}),
        ("POST", HISTORY, {"query": "a", "hosts": ["h"] * 51}),
        ("POST", HISTORY, {"query": "a", "fields": "status"}),
        ("POST", HISTORY, {"query": "a", "fields": [5]}),
        ("POST", HISTORY, {"query": "a", "fields": ["f" * 257]}),
        ("POST", HISTORY, {"query": "a", "from_ms": 1000, "to_ms": 2000}),
        ("POST", FORGET, {}),
        ("POST", FORGET, {"query": ""}),
        ("POST", FORGET, {"query": 5}),
        ("POST", FORGET, {"query": "x" * (MAX_QUERY_LENGTH + 1)}),
        ("POST", FORGET, {"query": "a", "range": "1h"}),
        ("POST", STAR, {}),
        ("POST", STAR, {"query": ""}),
        ("POST", STAR, {"query": "a", "range": "1y"}),
        ("POST", STAR, {"query": "a", "from": 5}),
        ("POST", STAR, {"query": "a", "hosts": "web"}),
        ("POST", STAR, {"query": "a", "extra": 1}),
        ("POST", UNSTAR, {"query": ""}),
        ("POST", UNSTAR, {"query": "a", "hosts": []}),
        ("POST", NAME, {"query": "a"}),
        ("POST", NAME, {"query": "", "name": "x"}),
        ("POST", NAME, {"query": "a", "name": 5}),
        ("POST", NAME, {"query": "a", "name": "n" * (MAX_STARRED_NAME_LENGTH + 1)}),
        ("POST", NAME, {"query": "a", "name": "x", "range": "2h"}),
        ("POST", MOVE, {"query": "a"}),
        ("POST", MOVE, {"query": "a", "position": -1}),
        ("POST", MOVE, {"query": "a", "position": "1"}),
        ("POST", MOVE, {"query": "a", "position": 1.5}),
        ("POST", MOVE, {"query": "", "position": 0}),
    ],
)
async def test_bad_bodies_are_400_and_change_nothing(
    client: AppClient, method: str, path: str, body: object
) -> None:
    _, browser = await _person(client)
    response = await client.request(method, path, json=body, headers=browser.headers)
    assert response.status_code == 400, response.text
    assert response.json()["status"] == "error"
    after = (await client.get(PATH, headers=browser.cookies_only)).json()
    assert after == {"utc": False, "query_history": [], "searches": [], "starred": []}


async def test_a_query_as_long_as_a_search_takes_is_kept(client: AppClient) -> None:
    _, browser = await _person(client)
    longest = "x" * MAX_QUERY_LENGTH
    assert await _remember(client, browser, longest) == [longest]


async def test_writes_need_the_csrf_token(client: AppClient) -> None:
    _, browser = await _person(client)
    forged = await client.patch(PATH, json={"utc": True}, headers=browser.cookies_only)
    assert forged.status_code == 403
    await _remember(client, browser, "kept")
    forged = await client.post(FORGET, json={"query": "kept"}, headers=browser.cookies_only)
    assert forged.status_code == 403
    for path, body in ((STAR, {"query": "kept"}), (UNSTAR, {"query": "kept"})):
        forged = await client.post(path, json=body, headers=browser.cookies_only)
        assert forged.status_code == 403
    await _star(client, browser, {"query": "starred"})
    forged = await client.post(
        NAME, json={"query": "starred", "name": "forged"}, headers=browser.cookies_only
    )
    assert forged.status_code == 403
    assert (await client.get(PATH, headers=browser.cookies_only)).json()["starred"] == [
        {**STARRED, "query": "starred"}
    ]
    assert (await client.get(PATH, headers=browser.cookies_only)).json()["query_history"] == [
        "kept"
    ]
    assert (await client.get(PATH, headers=browser.cookies_only)).json()["utc"] is False


async def test_keys_have_no_preferences(client: AppClient) -> None:
    """Preferences belong to a person: a key, or a browser signed in with one, gets 403
    in the v1 error shape, and nothing is stored."""
    tenant = await make_tenant(client.database_url)
    account = await with_service_key(client, await make_account(client, tenant))
    key = await create_key(client, account, type_="service")
    key_browser = await sign_in(client, {"key": key["key"]})
    credentials = {
        "service key": account.headers,
        "enterprise key": tenant.headers,
        "enterprise key for its account": tenant.as_account(account.account_id),
        "browser signed in with a key": key_browser.headers,
    }
    for name, headers in credentials.items():
        for method, path, body in (
            ("GET", PATH, None),
            ("PATCH", PATH, {"utc": True}),
            ("POST", HISTORY, {"query": "error"}),
            ("DELETE", HISTORY, None),
            ("POST", FORGET, {"query": "error"}),
            ("POST", STAR, {"query": "error"}),
            ("POST", UNSTAR, {"query": "error"}),
            ("POST", NAME, {"query": "error", "name": "Errors"}),
        ):
            response = await client.request(method, path, json=body, headers=headers)
            where = f"{method} {path} as {name}: {response.text}"
            assert response.status_code == 403, where
            answer = response.json()
            assert answer["code"] == "Forbidden", where
            assert answer["status"] == "error", where
            assert "person" in answer["error"], where


async def test_without_credentials_401(client: AppClient) -> None:
    assert (await client.get(PATH)).status_code == 401
    assert (await client.post(HISTORY, json={"query": "x"})).status_code == 401
    assert (await client.post(FORGET, json={"query": "x"})).status_code == 401
    assert (await client.post(STAR, json={"query": "x"})).status_code == 401
    assert (await client.post(UNSTAR, json={"query": "x"})).status_code == 401
    assert (await client.post(NAME, json={"query": "x", "name": "n"})).status_code == 401


async def _star(
    client: AppClient, browser: Browser, body: dict[str, object]
) -> list[dict[str, object]]:
    response = await client.post(STAR, json=body, headers=browser.headers)
    assert response.status_code == 200, response.text
    starred: list[dict[str, object]] = response.json()["starred"]
    return starred


async def test_starred_searches_are_kept_apart_from_the_history_until_unstarred(
    client: AppClient,
) -> None:
    person, browser = await _person(client)
    errors = {"query": "level:error", "range": "2h", "apps": ["web"]}
    assert await _star(client, browser, errors) == [{**STARRED, **errors}]
    # Starred with a range of its own, an absolute one; first, as starred last.
    window = {"query": "  timeout  ", "from": 1_000, "to": 2_000}
    starred = await _star(client, browser, window)
    assert starred == [{**STARRED, **window, "query": "timeout"}, {**STARRED, **errors}]
    # Starred again: moved first with what it is starred with now, not kept twice.
    again = {"query": "level:error", "levels": ["error"]}
    assert [entry["query"] for entry in await _star(client, browser, again)] == [
        "level:error",
        "timeout",
    ]
    # A blank query is not starred; starring leaves the history alone, and the
    # history's bound does not reach the starred searches.
    assert len(await _star(client, browser, {"query": "   "})) == 2
    for n in range(MAX_QUERY_HISTORY + 1):
        await _remember(client, browser, f"q{n}")
    await client.delete(HISTORY, headers=browser.headers)
    answer = (
        await client.get(PATH, headers=(await sign_in_person(client, person)).cookies_only)
    ).json()
    assert answer["query_history"] == []
    assert answer["starred"] == [{**STARRED, **again}, {**STARRED, **window, "query": "timeout"}]

    # Unstarred one by one (trimmed, exactly as starred); the history is untouched.
    await _remember(client, browser, "timeout")
    for query, left in (
        (" timeout ", ["level:error"]),
        ("Level:Error", ["level:error"]),
        ("level:error", []),
    ):
        response = await client.post(UNSTAR, json={"query": query}, headers=browser.headers)
        assert response.status_code == 200, response.text
        assert [entry["query"] for entry in response.json()["starred"]] == left
        assert response.json()["query_history"] == ["timeout"]


async def test_at_most_fifty_searches_are_starred(client: AppClient) -> None:
    _, browser = await _person(client)
    _, stranger = await _person(client)
    for n in range(MAX_STARRED):
        await _star(client, browser, {"query": f"q{n}"})
    refused = await client.post(STAR, json={"query": "one more"}, headers=browser.headers)
    assert refused.status_code == 409, refused.text
    assert refused.json()["status"] == "error"
    assert f"{MAX_STARRED}" in refused.json()["error"]
    # Starring one of them again is no new one; unstarring one makes room.
    assert (await _star(client, browser, {"query": "q0", "range": "1d"}))[0]["query"] == "q0"
    await client.post(UNSTAR, json={"query": "q7"}, headers=browser.headers)
    starred = await _star(client, browser, {"query": "one more"})
    assert len(starred) == MAX_STARRED
    assert "q7" not in [entry["query"] for entry in starred]
    # Another person's are their own.
    assert (await client.get(PATH, headers=stranger.cookies_only)).json()["starred"] == []


async def _name(
    client: AppClient, browser: Browser, query: str, name: str | None
) -> list[dict[str, object]]:
    response = await client.post(NAME, json={"query": query, "name": name}, headers=browser.headers)
    assert response.status_code == 200, response.text
    starred: list[dict[str, object]] = response.json()["starred"]
    return starred


async def test_a_starred_search_is_named_in_its_place_and_keeps_its_name(
    client: AppClient,
) -> None:
    person, browser = await _person(client)
    _, stranger = await _person(client)
    for query in ("a", "level:error app:web", "c"):
        await _star(client, browser, {"query": query, "range": "1h"})
    await _star(client, stranger, {"query": "level:error app:web"})

    # Named (trimmed, as typed otherwise): in its place, the others unnamed.
    named = await _name(client, browser, " level:error app:web ", "  Errors on web  ")
    assert [(entry["query"], entry["name"]) for entry in named] == [
        ("c", None),
        ("level:error app:web", "Errors on web"),
        ("a", None),
    ]
    assert named[1] == {
        **STARRED,
        "query": "level:error app:web",
        "range": "1h",
        "name": "Errors on web",
    }
    # The longest name kept whole; starred again (another range): first, its name kept.
    longest = "é" * MAX_STARRED_NAME_LENGTH
    assert (await _name(client, browser, "a", longest))[2]["name"] == longest
    again = await _star(client, browser, {"query": "level:error app:web", "range": "2h"})
    assert (again[0]["query"], again[0]["range"], again[0]["name"]) == (
        "level:error app:web",
        "2h",
        "Errors on web",
    )
    # Read back in another session; another person's star of the same query unnamed.
    answer = (
        await client.get(PATH, headers=(await sign_in_person(client, person)).cookies_only)
    ).json()
    assert [entry["name"] for entry in answer["starred"]] == [
        "Errors on web",
        None,
        longest,
    ]
    theirs = (await client.get(PATH, headers=stranger.cookies_only)).json()["starred"]
    assert theirs == [{**STARRED, "query": "level:error app:web"}]

    # A blank name or null takes the name away; a query not starred is a 404.
    for nothing in ("   ", None):
        await _name(client, browser, "a", "x")
        assert (await _name(client, browser, "a", nothing))[2]["name"] is None
    missing = await client.post(NAME, json={"query": "b", "name": "x"}, headers=browser.headers)
    assert missing.status_code == 404, missing.text
    assert missing.json()["status"] == "error"
    unstarred = await client.post(
        UNSTAR, json={"query": "level:error app:web"}, headers=browser.headers
    )
    assert unstarred.status_code == 200
    assert (await _star(client, browser, {"query": "level:error app:web"}))[0]["name"] is None


async def test_a_starred_search_is_moved_to_a_place_the_others_keeping_their_order(
    client: AppClient,
) -> None:
    person, browser = await _person(client)
    _, stranger = await _person(client)
    for query in ("d", "c", "b", "a"):
        await _star(client, browser, {"query": query, "range": "1h"})
    await _star(client, stranger, {"query": "a"})
    await _star(client, stranger, {"query": "b"})
    await _name(client, browser, "c", "Named")

    async def move(query: str, position: int) -> list[str]:
        response = await client.post(
            MOVE, json={"query": query, "position": position}, headers=browser.headers
        )
        assert response.status_code == 200, response.text
        return [entry["query"] for entry in response.json()["starred"]]

    assert await move("a", 2) == ["b", "c", "a", "d"]
    assert await move(" d ", 0) == ["d", "b", "c", "a"]  # trimmed, as it was starred
    assert await move("d", 3) == ["b", "c", "a", "d"]
    assert await move("b", 10**30) == ["c", "a", "d", "b"]  # past the end: the last
    assert await move("a", 1) == ["c", "a", "d", "b"]  # where it is: nothing moves
    # What each carries moves with it; read back in another session; another person's
    # order untouched; the history untouched.
    answer = (
        await client.get(PATH, headers=(await sign_in_person(client, person)).cookies_only)
    ).json()
    assert answer["starred"][0] == {**STARRED, "query": "c", "range": "1h", "name": "Named"}
    assert [entry["query"] for entry in answer["starred"]] == ["c", "a", "d", "b"]
    assert answer["query_history"] == []
    theirs = (await client.get(PATH, headers=stranger.cookies_only)).json()["starred"]
    assert [entry["query"] for entry in theirs] == ["b", "a"]
    # A query not starred is a 404, and changes nothing; the CSRF token is needed.
    missing = await client.post(MOVE, json={"query": "e", "position": 0}, headers=browser.headers)
    assert missing.status_code == 404, missing.text
    assert missing.json()["status"] == "error"
    forged = await client.post(
        MOVE, json={"query": "b", "position": 0}, headers=browser.cookies_only
    )
    assert forged.status_code == 403
    after = (await client.get(PATH, headers=browser.cookies_only)).json()["starred"]
    assert [entry["query"] for entry in after] == ["c", "a", "d", "b"]

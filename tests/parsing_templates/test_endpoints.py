"""The v1 parsing templates API over HTTP, on SQLite and on PostgreSQL: shapes,
validation (400 in the legacy error shape), order, state and the preview."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests.conftest import AppClient
from tests.exclusions.test_endpoints import assert_legacy_error, new_account
from tests.factories import AccountCtx
from tests.ingest.factories import ingest, make_ingestor
from tests.users.factories import add_person, sign_in_person

TEMPLATES = "/v1/config/parsing/templates"
FIELDS = {
    "id",
    "name",
    "pattern",
    "state",
    "position",
    "fields",
    "activated_at",
    "matched_lines",
    "last_matched_at",
    "created_at",
    "updated_at",
}
PATTERN = r"%{WORD:method} %{URIPATH:path} took (?P<ms>\d+)ms status=%{INT:status:int}"


async def create(client: AppClient, account: AccountCtx, **fields: Any) -> dict[str, Any]:
    body = {"name": "requests", "pattern": PATTERN, **fields}
    response = await client.post(TEMPLATES, json=body, headers=account.headers)
    assert response.status_code == 200, response.text
    created: dict[str, Any] = response.json()
    return created


async def test_create_is_a_draft_with_its_fields(client: AppClient) -> None:
    account = await new_account(client)
    template = await create(client, account)
    assert set(template) == FIELDS
    assert template["state"] == "draft"
    assert template["activated_at"] is None
    assert template["position"] == 0
    assert template["fields"] == ["method", "path", "status", "ms"]
    assert template["pattern"] == PATTERN


@pytest.mark.parametrize(
    ("pattern", "says"),
    [
        ("(?P<x>a", "missing )"),
        (r"(?P<x>a)\1", "RE2"),  # a backreference: not linear
        ("(?=x)(?P<x>a)", "RE2"),  # lookahead
        ("%{NOPE:x}", "not a known pattern name"),
        ("%{WORD:x", "never closed"),
        ("%{WORD:x:bool}", "int or float"),
        ("%{WORD:a b}", "field name"),
        ("plain text only", "captures nothing"),
        ("(?P<__tg0>a)", "reserved"),
        ("x" * 4097, "4096"),
        ("   ", "empty"),
    ],
)
async def test_a_bad_pattern_is_a_400_saying_why(
    client: AppClient, pattern: str, says: str
) -> None:
    account = await new_account(client)
    response = await client.post(
        TEMPLATES, json={"name": "bad", "pattern": pattern}, headers=account.headers
    )
    message = assert_legacy_error(response, 400)
    assert says.lower() in message.lower(), message
    listed = await client.get(TEMPLATES, headers=account.headers)
    assert listed.json() == []


async def test_other_bad_bodies_are_400s(client: AppClient) -> None:
    account = await new_account(client)
    for body in (
        {"name": "x", "pattern": PATTERN, "state": "on"},
        {"name": "", "pattern": PATTERN},
        {"name": "x"},
        {"name": "x", "pattern": PATTERN, "extra": 1},
    ):
        response = await client.post(TEMPLATES, json=body, headers=account.headers)
        assert_legacy_error(response, 400)
    template = await create(client, account)
    path = f"{TEMPLATES}/{template['id']}"
    response = await client.patch(path, json={"pattern": "(?P<"}, headers=account.headers)
    assert_legacy_error(response, 400)
    assert (await client.get(path, headers=account.headers)).json() == template


async def test_crud_round_trip(client: AppClient) -> None:
    account = await new_account(client)
    first = await create(client, account, name="first")
    second = await create(client, account, name="second", state="inactive")
    assert second["position"] == 1
    listed = await client.get(TEMPLATES, headers=account.headers)
    assert listed.status_code == 200
    assert listed.json() == [first, second]
    path = f"{TEMPLATES}/{first['id']}"
    assert (await client.get(path, headers=account.headers)).json() == first

    changed = await client.patch(
        path, json={"name": "renamed", "pattern": "user=(?P<user>\\w+)"}, headers=account.headers
    )
    assert changed.status_code == 200, changed.text
    body = changed.json()
    assert (body["name"], body["fields"], body["state"]) == ("renamed", ["user"], "draft")
    assert body["updated_at"] >= first["updated_at"]

    deleted = await client.delete(path, headers=account.headers)
    assert deleted.status_code == 200
    assert deleted.json()["id"] == first["id"]
    assert_legacy_error(await client.get(path, headers=account.headers), 404)
    assert [
        item["id"] for item in (await client.get(TEMPLATES, headers=account.headers)).json()
    ] == [second["id"]]


async def test_activate_stamps_the_time_and_the_active_count_is_bounded(
    client: AppClient,
) -> None:
    account = await new_account(client)
    template = await create(client, account)
    response = await client.post(f"{TEMPLATES}/{template['id']}/activate", headers=account.headers)
    assert response.status_code == 200, response.text
    active = response.json()
    assert active["state"] == "active"
    assert active["activated_at"] is not None
    # Active again: nothing changes the time it became active.
    again = await client.post(f"{TEMPLATES}/{template['id']}/activate", headers=account.headers)
    assert again.json()["activated_at"] == active["activated_at"]
    paused = await client.patch(
        f"{TEMPLATES}/{template['id']}", json={"state": "inactive"}, headers=account.headers
    )
    assert paused.json()["state"] == "inactive"
    for _ in range(10):
        await create(client, account, state="active")
    response = await client.post(f"{TEMPLATES}/{template['id']}/activate", headers=account.headers)
    assert "at most 10" in assert_legacy_error(response, 400)
    response = await client.post(
        TEMPLATES,
        json={"name": "x", "pattern": PATTERN, "state": "active"},
        headers=account.headers,
    )
    assert_legacy_error(response, 400)


async def test_reorder_takes_every_id_once(client: AppClient) -> None:
    account = await new_account(client)
    a, b, c = [await create(client, account, name=name) for name in "abc"]
    order = f"{TEMPLATES}/order"
    response = await client.put(
        order, json={"ids": [c["id"], a["id"], b["id"]]}, headers=account.headers
    )
    assert response.status_code == 200, response.text
    assert [(item["name"], item["position"]) for item in response.json()] == [
        ("c", 0),
        ("a", 1),
        ("b", 2),
    ]
    listed = (await client.get(TEMPLATES, headers=account.headers)).json()
    assert [item["name"] for item in listed] == ["c", "a", "b"]
    for ids in (
        [a["id"], b["id"]],
        [a["id"], a["id"], b["id"], c["id"]],
        ["nope", a["id"], b["id"]],
    ):
        assert_legacy_error(
            await client.put(order, json={"ids": ids}, headers=account.headers), 400
        )
    # Another account's id is not one of these.
    other = await new_account(client)
    theirs = await create(client, other)
    response = await client.put(
        order, json={"ids": [theirs["id"], a["id"], b["id"]]}, headers=account.headers
    )
    assert_legacy_error(response, 400)
    assert [
        item["name"] for item in (await client.get(TEMPLATES, headers=account.headers)).json()
    ] == [
        "c",
        "a",
        "b",
    ]


async def test_an_account_sees_and_changes_only_its_own_templates(client: AppClient) -> None:
    owner = await new_account(client)
    stranger = await new_account(client)
    template = await create(client, owner)
    path = f"{TEMPLATES}/{template['id']}"
    assert (await client.get(TEMPLATES, headers=stranger.headers)).json() == []
    for method, url, body in (
        ("GET", path, None),
        ("PATCH", path, {"name": "pwned"}),
        ("POST", f"{path}/activate", None),
        ("DELETE", path, None),
    ):
        response = await client.request(method, url, json=body, headers=stranger.headers)
        assert_legacy_error(response, 404)
    assert (await client.get(path, headers=owner.headers)).json() == template


async def test_preview_on_given_lines(client: AppClient) -> None:
    account = await new_account(client)
    response = await client.post(
        f"{TEMPLATES}/preview",
        json={
            "pattern": r"^%{LOGLEVEL:level} user=%{INT:user.id:int} (?P<message>.*)$",
            "lines": ["err user=42 disk full", "no match here", "INFO user=x nope"],
        },
        headers=account.headers,
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["fields"] == ["level", "user.id", "message"]
    assert (body["total"], body["matched"]) == (3, 1)
    hit, miss, other = body["lines"]
    assert hit["matched"] is True
    assert hit["fields"] == {"level": "err", "user": {"id": 42}, "message": "disk full"}
    assert hit["level"] == "ERROR"
    assert (miss["matched"], miss["fields"]) == (False, None)
    assert other["matched"] is False
    bad = await client.post(
        f"{TEMPLATES}/preview", json={"pattern": "(a)\\1"}, headers=account.headers
    )
    assert_legacy_error(bad, 400)


async def test_preview_leaves_the_lines_an_earlier_active_template_takes(
    client: AppClient,
) -> None:
    account = await new_account(client)
    timing = await create(client, account, name="timing", pattern=r"took (?P<ms>\d+)ms")
    await create(client, account, name="idle", pattern=r"(?P<anything>.+)")  # a draft
    words = await create(client, account, name="words", pattern=r"^(?P<first>\w+) ")
    for template in (timing, words):
        activated = await client.post(
            f"{TEMPLATES}/{template['id']}/activate", headers=account.headers
        )
        assert activated.status_code == 200, activated.text
    lines = ["GET /a took 3ms", "POST /b failed", "zzz"]

    async def preview(**extra: Any) -> dict[str, Any]:
        response = await client.post(
            f"{TEMPLATES}/preview",
            json={"pattern": r"^(?P<verb>[A-Z]+) (?P<path>\S+)", "lines": lines, **extra},
            headers=account.headers,
        )
        assert response.status_code == 200, response.text
        found: dict[str, Any] = response.json()
        return found

    # A new template goes last: both active ones are tried first (the draft is not).
    new = await preview()
    assert (new["total"], new["matched"], new["taken"]) == (3, 0, 2)
    taken = [line["taken_by"] for line in new["lines"]]
    assert taken == [
        {"id": timing["id"], "name": "timing"},
        {"id": words["id"], "name": "words"},
        None,
    ]
    assert [line["fields"] for line in new["lines"]] == [None, None, None]
    # Editing the second active template: only the first is tried before it.
    second = await preview(id=words["id"])
    assert (second["matched"], second["taken"]) == (1, 1)
    assert second["lines"][1]["fields"] == {"verb": "POST", "path": "/b"}
    assert second["lines"][1]["taken_by"] is None
    # Editing the first: nothing comes before it.
    first = await preview(id=timing["id"])
    assert (first["matched"], first["taken"]) == (2, 0)
    unknown = await client.post(
        f"{TEMPLATES}/preview",
        json={"pattern": r"(?P<x>.)", "lines": lines, "id": "0" * 24},
        headers=account.headers,
    )
    assert_legacy_error(unknown, 404)


async def test_preview_on_the_accounts_latest_lines_saves_nothing(client: AppClient) -> None:
    who = await make_ingestor(client)
    other = await make_ingestor(client)
    lines = [{"line": f"GET /items/{n} took {n}ms status=200"} for n in range(5)]
    assert (await ingest(client, who, [*lines, {"line": "something else"}])).status_code == 200
    assert (
        await ingest(client, other, [{"line": "GET /secret took 1ms status=500"}])
    ).status_code == 200
    response = await client.post(
        f"{TEMPLATES}/preview", json={"pattern": PATTERN, "size": 50}, headers=who.account.headers
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["total"] == 6  # this account's lines only
    assert body["matched"] == 5
    texts = {line["line"] for line in body["lines"]}
    assert "GET /secret took 1ms status=500" not in texts
    hit = next(line for line in body["lines"] if line["line"] == "GET /items/3 took 3ms status=200")
    # status is a reserved name: stored as _status, found as status: (as for JSON)
    assert hit["fields"] == {"method": "GET", "path": "/items/3", "_status": 200, "ms": "3"}
    assert hit["host"] == "web-1"
    limited = await client.post(
        f"{TEMPLATES}/preview", json={"pattern": PATTERN, "size": 2}, headers=who.account.headers
    )
    assert limited.json()["total"] == 2
    assert (await client.get(TEMPLATES, headers=who.account.headers)).json() == []


async def test_a_scoped_admin_previews_only_the_lines_of_its_scope(client: AppClient) -> None:
    who = await make_ingestor(client)
    sent = [
        {"line": "web ok took 1ms", "app": "web"},
        {"line": "card 4111 took 2ms", "app": "vault"},
    ]
    assert (await ingest(client, who, sent)).status_code == 200
    group = await client.post(
        "/v1/config/groups", json={"name": "web", "apps": ["web"]}, headers=who.account.headers
    )
    assert group.status_code == 200, group.text
    person = await add_person(client.database_url, account_id=who.account_id, role="admin")
    placed = await client.put(
        f"/v1/config/members/{person.email}",
        json={"groups": [group.json()["id"]]},
        headers=who.account.headers,
    )
    assert placed.status_code == 200, placed.text
    admin = await sign_in_person(client, person)
    response = await client.post(
        f"{TEMPLATES}/preview", json={"pattern": r"took (?P<ms>\d+)ms"}, headers=admin.headers
    )
    assert response.status_code == 200, response.text
    assert [line["line"] for line in response.json()["lines"]] == ["web ok took 1ms"]
    assert "4111" not in response.text
    # A readonly person may list templates but not preview (it is part of managing them).
    reader = await sign_in_person(
        client, await add_person(client.database_url, account_id=who.account_id, role="readonly")
    )
    assert (await client.get(TEMPLATES, headers=reader.headers)).status_code == 200
    denied = await client.post(
        f"{TEMPLATES}/preview", json={"pattern": r"(?P<x>.)"}, headers=reader.headers
    )
    assert_legacy_error(denied, 403)


async def test_concurrent_activations_never_pass_the_active_limit(client: AppClient) -> None:
    account = await new_account(client)

    async def one(index: int) -> int:
        response = await client.post(
            TEMPLATES,
            json={"name": f"t{index}", "pattern": PATTERN, "state": "active"},
            headers=account.headers,
        )
        return response.status_code

    statuses = await asyncio.gather(*(one(index) for index in range(14)))
    assert sorted(statuses) == [200] * 10 + [400] * 4
    listed = (await client.get(TEMPLATES, headers=account.headers)).json()
    assert sum(item["state"] == "active" for item in listed) == 10

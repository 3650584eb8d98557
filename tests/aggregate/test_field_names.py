"""GET /v1/aggregate/fields: the key paths of the meta of a range's newest lines (sent,
or parsed from JSON lines at ingestion), counted, filtered as an export is, and within
a person's group scope."""

from __future__ import annotations

from typing import Any

from tests.conftest import AppClient
from tests.factories import AccountCtx, insert_key, make_account, make_tenant
from tests.users.factories import person_in_group

from tidegate.clock import now_ms

HOUR_MS = 3_600_000
# Lines take the server's time (the sender's `now` corrects their clock): the range is
# around the tests' run.
NOW_MS = now_ms()
RANGE = {"from": NOW_MS - 24 * HOUR_MS, "to": NOW_MS + 24 * HOUR_MS}


async def _account(client: AppClient) -> tuple[AccountCtx, str]:
    account = await make_account(client, await make_tenant(client.database_url))
    key = await insert_key(client.database_url, kind="ingestion", account_id=account.account_id)
    return account, key


async def _ingest(client: AppClient, key: str, lines: list[dict[str, Any]]) -> None:
    response = await client.post(
        "/logs/ingest",
        params={"hostname": "h", "now": now_ms()},
        headers={"apikey": key},
        json={"lines": lines},
    )
    assert response.status_code == 200, response.text


LINES = [
    {
        "line": "signed in",
        "app": "web",
        "meta": {"user": {"id": 1, "roles": ["a"]}, "region": "eu"},
    },
    {"line": "signed out", "app": "web", "meta": {"region": "us", "empty": {}}},
    {"line": '{"http": {"method": "GET", "path": "/"}, "took_ms": 12}', "app": "api"},
    {"line": "no fields at all", "app": "api"},
]


def _paths(answer: dict[str, Any]) -> dict[tuple[str, ...], int]:
    return {tuple(item["path"]): item["lines"] for item in answer["paths"]}


async def test_the_fields_of_a_ranges_lines_are_named_and_counted(client: AppClient) -> None:
    account, key = await _account(client)
    await _ingest(client, key, LINES)
    # Outside the range: not read.
    old = {"line": "old", "meta": {"ancient": 1}, "timestamp": NOW_MS - 48 * HOUR_MS}
    await _ingest(client, key, [old])

    response = await client.get("/v1/aggregate/fields", params=RANGE, headers=account.headers)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["sampled"] == 4
    assert _paths(answer) == {
        ("region",): 2,  # the most frequent first
        ("http", "method"): 1,
        ("http", "path"): 1,
        ("took_ms",): 1,
        ("user", "id"): 1,
    }
    assert answer["paths"][0]["path"] == ["region"]

    wider = {"from": NOW_MS - 72 * HOUR_MS, "to": RANGE["to"]}
    everything = await client.get("/v1/aggregate/fields", params=wider, headers=account.headers)
    assert everything.json()["sampled"] == 5
    assert ("ancient",) in _paths(everything.json())

    only_web = await client.get(
        "/v1/aggregate/fields", params={**RANGE, "apps": "web"}, headers=account.headers
    )
    assert _paths(only_web.json()) == {("region",): 2, ("user", "id"): 1}
    queried = await client.get(
        "/v1/aggregate/fields",
        params={**RANGE, "query": "http.method:GET"},
        headers=account.headers,
    )
    assert set(_paths(queried.json())) == {("http", "method"), ("http", "path"), ("took_ms",)}
    bad = await client.get(
        "/v1/aggregate/fields", params={**RANGE, "query": "("}, headers=account.headers
    )
    assert bad.status_code == 400, bad.text


async def test_a_person_in_a_group_is_told_the_fields_of_their_scope_only(
    client: AppClient,
) -> None:
    account, key = await _account(client)
    await _ingest(client, key, LINES)
    web_only = await person_in_group(
        client,
        account_id=account.account_id,
        headers=account.headers,
        group={"name": "web people", "apps": ["web"]},
    )
    response = await client.get("/v1/aggregate/fields", params=RANGE, headers=web_only.headers)
    assert response.status_code == 200, response.text
    assert _paths(response.json()) == {("region",): 2, ("user", "id"): 1}
    assert response.json()["sampled"] == 2


async def test_another_accounts_fields_are_never_named(client: AppClient) -> None:
    _account_of_the_lines, key = await _account(client)
    other, _other_key = await _account(client)
    await _ingest(client, key, LINES)
    response = await client.get("/v1/aggregate/fields", params=RANGE, headers=other.headers)
    assert response.json() == {"paths": [], "sampled": 0}

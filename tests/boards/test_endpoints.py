"""The v1 boards API over HTTP, on SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from tests.conftest import AppClient
from tests.factories import AccountCtx, make_account, make_tenant
from tests.keys.factories import with_service_key

BOARDS = "/v1/config/board"
GRAPHS = [
    {"type": "histogram", "query": "level:error", "apps": ["api"]},
    {"type": "counter", "options": {"nested": [1, 2.5, None, True, "x"]}},
]


def assert_legacy_error(response: httpx.Response, status: int, code: str | None = None) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "code", "status"}
    assert isinstance(body["error"], str)
    assert body["error"]
    assert isinstance(body["code"], str)
    assert body["status"] == "error"
    if code is not None:
        assert body["code"] == code
    return str(body["error"])


async def new_account(client: AppClient) -> AccountCtx:
    return await make_account(client, await make_tenant(client.database_url))


async def create_board(client: AppClient, account: AccountCtx, **fields: Any) -> dict[str, Any]:
    body = {"title": "Errors", "graphs": GRAPHS, **fields}
    response = await client.post(BOARDS, json=body, headers=account.headers)
    assert response.status_code == 200, response.text
    board: dict[str, Any] = response.json()
    return board


async def test_create_and_list(client: AppClient) -> None:
    account = await new_account(client)
    short_id = account.data["account"]
    assert (await client.get(BOARDS, headers=account.headers)).json() == []

    first = await create_board(client, account)
    assert set(first) == {"boardid", "account", "title", "graphs"}
    assert first["account"] == short_id
    assert first["title"] == "Errors"
    assert first["graphs"] == GRAPHS
    assert isinstance(first["boardid"], str)
    second = await create_board(client, account, title="Empty", graphs=None)
    assert second["graphs"] == []
    third = (await client.post(BOARDS, json={"title": "No graphs"}, headers=account.headers)).json()
    assert third["graphs"] == []

    listed = await client.get(BOARDS, headers=account.headers)
    assert listed.status_code == 200
    assert listed.json() == [
        {"boardid": board["boardid"], "account": short_id, "title": board["title"]}
        for board in (first, second, third)
    ]


async def test_read_update_delete(client: AppClient) -> None:
    account = await new_account(client)
    board = await create_board(client, account)
    path = f"{BOARDS}/{board['boardid']}"

    one = await client.get(path, headers=account.headers)
    assert one.status_code == 200
    assert one.json() == board

    renamed = await client.patch(path, json={"title": "Renamed"}, headers=account.headers)
    assert renamed.status_code == 200
    assert renamed.json() == {**board, "title": "Renamed"}
    regraphed = await client.patch(path, json={"graphs": []}, headers=account.headers)
    assert regraphed.json() == {**board, "title": "Renamed", "graphs": []}
    unchanged = await client.patch(
        path, json={"title": None, "graphs": None}, headers=account.headers
    )
    assert unchanged.json() == regraphed.json()
    # Read-modify-write: echoing the read-only fields back is fine; they never change.
    echoed = await client.patch(
        path, json={**regraphed.json(), "boardid": "x", "account": "y"}, headers=account.headers
    )
    assert echoed.status_code == 200
    assert echoed.json() == regraphed.json()

    deleted = await client.delete(path, headers=account.headers)
    assert deleted.status_code == 200
    assert deleted.json() == regraphed.json()
    assert_legacy_error(await client.get(path, headers=account.headers), 404, "NotFound")
    assert_legacy_error(await client.delete(path, headers=account.headers), 404, "NotFound")
    assert (await client.get(BOARDS, headers=account.headers)).json() == []


@pytest.mark.parametrize(
    ("body", "names"),
    [
        ({"graphs": []}, "title"),
        ({"title": ""}, "title"),
        ({"title": "x" * 251}, "title"),
        ({"title": "a\u0000b"}, "title"),
        ({"title": 3}, "title"),
        ({"title": "t", "graphs": {"a": 1}}, "graphs"),
        ({"title": "t", "graphs": [1]}, "graphs"),
        ({"title": "t", "graphs": [[]]}, "graphs"),
        ({"title": "t", "extra": True}, None),
    ],
)
async def test_create_validation(
    client: AppClient, body: dict[str, Any], names: str | None
) -> None:
    account = await new_account(client)
    response = await client.post(BOARDS, json=body, headers=account.headers)
    message = assert_legacy_error(response, 400, "BadRequest")
    if names is not None:
        assert names in message
    assert (await client.get(BOARDS, headers=account.headers)).json() == []


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


@pytest.mark.parametrize(
    "raw",
    [
        # Python's JSON parser accepts these; a database JSON column or a response does not.
        b'{"title": "t", "graphs": [{"v": NaN}]}',
        b'{"title": "t", "graphs": [{"v": 1e400}]}',
        b'{"title": "t", "graphs": [{"v": "\\ud800"}]}',
        b'{"title": "t", "graphs": [{"\\udfff": 1}]}',
        b'{"title": "\\ud800"}',
        json.dumps({"title": "t", "graphs": [_nested(33)]}).encode(),
    ],
)
async def test_graphs_that_cannot_be_stored_are_refused(client: AppClient, raw: bytes) -> None:
    account = await new_account(client)
    headers = {**account.headers, "content-type": "application/json"}
    response = await client.post(BOARDS, content=raw, headers=headers)
    assert_legacy_error(response, 400, "BadRequest")


async def test_deep_but_allowed_graphs_round_trip(client: AppClient) -> None:
    account = await new_account(client)
    graphs = [_nested(32), {"nul": "a\u0000b", "big": 10**30, "unicode": "ünï ☃"}]
    board = await create_board(client, account, graphs=graphs)
    read = await client.get(f"{BOARDS}/{board['boardid']}", headers=account.headers)
    assert read.json()["graphs"] == graphs


@pytest.mark.parametrize(
    "body",
    [{"title": ""}, {"graphs": [1]}, {"graphs": "x"}, {"other": 1}],
)
async def test_patch_validation(client: AppClient, body: dict[str, Any]) -> None:
    account = await new_account(client)
    board = await create_board(client, account)
    path = f"{BOARDS}/{board['boardid']}"
    assert_legacy_error(await client.patch(path, json=body, headers=account.headers), 400)
    assert (await client.get(path, headers=account.headers)).json() == board


async def test_works_with_a_service_key(client: AppClient) -> None:
    account = await with_service_key(client, await new_account(client))
    for headers in ({"Authorization": f"Token {account.service_key}"},
                    {"servicekey": str(account.service_key)}):  # fmt: skip
        created = await client.post(BOARDS, json={"title": "mine"}, headers=headers)
        assert created.status_code == 200
        listed = (await client.get(BOARDS, headers=headers)).json()
        assert created.json()["boardid"] in {board["boardid"] for board in listed}


async def test_enterprise_key_without_delegation_is_forbidden(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    account = await make_account(client, tenant)
    board = await create_board(client, account)
    headers = tenant.headers
    assert_legacy_error(await client.get(BOARDS, headers=headers), 403, "Forbidden")
    assert_legacy_error(
        await client.post(BOARDS, json={"title": "t"}, headers=headers), 403, "Forbidden"
    )
    for method in ("GET", "PATCH", "DELETE"):
        body = {"title": "x"} if method == "PATCH" else None
        response = await client.request(
            method, f"{BOARDS}/{board['boardid']}", json=body, headers=headers
        )
        assert_legacy_error(response, 403, "Forbidden")


async def test_credentials_required(client: AppClient) -> None:
    assert_legacy_error(await client.get(BOARDS), 401, "Unauthorized")
    bad = {"Authorization": "Token sta_" + "0" * 40}
    assert_legacy_error(await client.post(BOARDS, json={"title": "t"}, headers=bad), 401)


@pytest.mark.parametrize("same_enterprise", [True, False])
async def test_another_accounts_board_is_not_found(
    client: AppClient, same_enterprise: bool
) -> None:
    owner_tenant = await make_tenant(client.database_url)
    owner = await make_account(client, owner_tenant)
    other_tenant = owner_tenant if same_enterprise else await make_tenant(client.database_url)
    intruder = await make_account(client, other_tenant)
    board = await create_board(client, owner)
    path = f"{BOARDS}/{board['boardid']}"

    for ctx in (intruder, await with_service_key(client, intruder)):
        assert_legacy_error(await client.get(path, headers=ctx.headers), 404, "NotFound")
        patched = await client.patch(path, json={"title": "pwned"}, headers=ctx.headers)
        assert_legacy_error(patched, 404, "NotFound")
        assert_legacy_error(await client.delete(path, headers=ctx.headers), 404, "NotFound")
        assert (await client.get(BOARDS, headers=ctx.headers)).json() == []

    assert (await client.get(path, headers=owner.headers)).json() == board


@pytest.mark.parametrize(
    ("board_id", "status"), [("missing", 404), ("0" * 24, 404), ("x" * 25, 400)]
)
async def test_unknown_or_malformed_ids(client: AppClient, board_id: str, status: int) -> None:
    account = await new_account(client)
    for method in ("GET", "PATCH", "DELETE"):
        body = {"title": "x"} if method == "PATCH" else None
        response = await client.request(
            method, f"{BOARDS}/{board_id}", json=body, headers=account.headers
        )
        assert_legacy_error(response, status)


async def test_concurrent_deletes_of_one_board(client: AppClient) -> None:
    account = await new_account(client)
    board = await create_board(client, account)
    path = f"{BOARDS}/{board['boardid']}"
    answers = await asyncio.gather(
        *(client.delete(path, headers=account.headers) for _ in range(3))
    )
    assert sorted(answer.status_code for answer in answers) == [200, 404, 404]

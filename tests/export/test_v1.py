"""GET /v1/export on both backends (the platform's CLI `search`): formats, the plan's
line cap, head and tail, filters with tags, the export credential forms, tenancy."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest
from tests.conftest import AppClient
from tests.export.helpers import BASE_MS, insert_lines
from tests.factories import AccountCtx, make_account, make_tenant
from tests.keys.factories import make_service_key

from tidegate.export import service
from tidegate.logs.store import NewLine

V1 = "/v1/export"
WINDOW = {"from": BASE_MS - 3_600_000, "to": BASE_MS + 3_600_000}


async def _account(client: AppClient, **fields: Any) -> AccountCtx:
    return await make_account(client, await make_tenant(client.database_url), **fields)


def _lines(count: int, **fields: Any) -> list[NewLine]:
    return [
        NewLine(line=f"line {i}", ts=BASE_MS + i * 1000, host="web-1", **fields)
        for i in range(count)
    ]


def _ndjson(response: httpx.Response) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/x-ndjson")
    text = response.text
    assert text == "" or text.endswith("\n")
    return [json.loads(row) for row in text.splitlines()]


async def test_ndjson_and_json_array_oldest_first(client: AppClient) -> None:
    account = await _account(client)
    await insert_lines(
        client.database_url,
        account.account_id,
        [*_lines(5, app="api"), NewLine(line="other", ts=BASE_MS, host="db-1", app="db")],
    )
    head = _ndjson(
        await client.get(
            V1,
            params={**WINDOW, "prefer": "head", "size": 3, "apps": "api"},
            headers=account.headers,
        )
    )
    assert [row["_line"] for row in head] == ["line 0", "line 1", "line 2"]
    assert {row["_host"] for row in head} == {"web-1"}
    assert head[0]["_ts"] == BASE_MS
    # tail: the last lines of the range, still oldest first (they read like a log).
    tail = _ndjson(
        await client.get(V1, params={**WINDOW, "size": 2, "apps": "api"}, headers=account.headers)
    )
    assert [row["_line"] for row in tail] == ["line 3", "line 4"]

    as_json = await client.get(
        V1, params={**WINDOW, "size": 2, "apps": "api", "json": "true"}, headers=account.headers
    )
    assert as_json.status_code == 200
    assert as_json.headers["content-type"].startswith("application/json")
    assert as_json.json() == tail

    nothing = await client.get(
        V1, params={**WINDOW, "q": "nomatch", "json": "true"}, headers=account.headers
    )
    assert nothing.json() == []
    assert (
        _ndjson(await client.get(V1, params={**WINDOW, "q": "nomatch"}, headers=account.headers))
        == []
    )


async def test_query_levels_and_tags(client: AppClient) -> None:
    account = await _account(client)
    await insert_lines(
        client.database_url,
        account.account_id,
        [
            NewLine(line="error in a", ts=BASE_MS, host="h", level="ERROR", tags=["Blue", "x"]),
            NewLine(line="error in b", ts=BASE_MS + 1, host="h", level="ERROR", tags=["red"]),
            NewLine(line="info in c", ts=BASE_MS + 2, host="h", level="INFO", tags=["blue"]),
            NewLine(line="error no tags", ts=BASE_MS + 3, host="h", level="ERROR"),
        ],
    )

    async def lines(**params: Any) -> list[str]:
        response = await client.get(V1, params={**WINDOW, **params}, headers=account.headers)
        return [row["_line"] for row in _ndjson(response)]

    assert await lines(q="error") == ["error in a", "error in b", "error no tags"]
    assert await lines(levels="info") == ["info in c"]
    assert await lines(tags="blue") == ["error in a", "info in c"]  # case-insensitive
    assert await lines(tags="blue, red", q="error") == ["error in a", "error in b"]
    assert await lines(tags="green") == []
    # The same filter on /v2/export.
    v2 = await client.get(
        "/v2/export",
        params={**WINDOW, "tags": "BLUE", "prefer": "head"},
        headers=account.headers,
    )
    assert v2.status_code == 200, v2.text
    assert [row["_line"] for row in v2.json()["lines"]] == ["error in a", "info in c"]


@pytest.mark.parametrize(("plan", "cap"), [("enterprise", 20_000), ("pro-plan", 10_000)])
async def test_lines_are_capped_by_plan(client: AppClient, plan: str, cap: int) -> None:
    account = await _account(client, plan={"type": plan})
    await insert_lines(
        client.database_url,
        account.account_id,
        [NewLine(line=f"n{i}", ts=BASE_MS + i, host="h") for i in range(cap + 5)],
    )
    for params in ({}, {"size": cap + 5000}):
        rows = _ndjson(await client.get(V1, params={**WINDOW, **params}, headers=account.headers))
        assert len(rows) == cap
        # tail: the newest ``cap`` lines, oldest first
        assert rows[0]["_line"] == "n5"
        assert rows[-1]["_line"] == f"n{cap + 4}"
    few = _ndjson(
        await client.get(
            V1, params={**WINDOW, "size": 7, "prefer": "head"}, headers=account.headers
        )
    )
    assert [row["_line"] for row in few] == [f"n{i}" for i in range(7)]


async def test_more_than_a_v2_page_crosses_scans(
    client: AppClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pages of 3 lines (the v2 limit lowered): v1 gathers several scans into one answer.
    monkeypatch.setattr(service, "MAX_SIZE", 3)
    account = await _account(client)
    await insert_lines(client.database_url, account.account_id, _lines(10))
    rows = _ndjson(
        await client.get(
            V1, params={**WINDOW, "size": 8, "prefer": "head"}, headers=account.headers
        )
    )
    assert [row["_line"] for row in rows] == [f"line {i}" for i in range(8)]
    rows = _ndjson(await client.get(V1, params={**WINDOW, "size": 8}, headers=account.headers))
    assert [row["_line"] for row in rows] == [f"line {i}" for i in range(2, 10)]


async def test_without_time_parameters_the_newest_lines_up_to_now(client: AppClient) -> None:
    # The CLI sends neither from nor to unless asked.
    account = await _account(client)
    await insert_lines(client.database_url, account.account_id, _lines(3))
    rows = _ndjson(await client.get(V1, params={"q": "line"}, headers=account.headers))
    assert [row["_line"] for row in rows] == ["line 0", "line 1", "line 2"]


@pytest.mark.parametrize(
    "params",
    [
        {"size": "0"},
        {"size": "many"},
        {"prefer": "middle"},
        {"json": "maybe"},
        {"from": "soon"},
        {"from": str(BASE_MS + 10), "to": str(BASE_MS)},
        {"q": "(unbalanced"},
        {"q": "a", "query": "b"},
        {"tags": ",".join(f"t{i}" for i in range(101))},
    ],
)
async def test_bad_parameters_are_400_in_the_legacy_shape(
    client: AppClient, params: dict[str, str]
) -> None:
    account = await _account(client)
    response = await client.get(V1, params=params, headers=account.headers)
    assert response.status_code == 400, response.text
    body = response.json()
    assert set(body) == {"error", "code", "status"}
    assert body["code"] == "BadRequest"


@pytest.mark.parametrize("path", [V1, "/v2/export"])
async def test_the_platform_export_credentials(client: AppClient, path: str) -> None:
    account = await _account(client)
    key = await make_service_key(client, account)
    await insert_lines(client.database_url, account.account_id, _lines(2))
    basic = base64.b64encode(f"{key}:".encode()).decode()
    forms: list[tuple[dict[str, str], dict[str, str]]] = [
        ({"Authorization": f"Token {key}"}, {}),
        ({"servicekey": key}, {}),
        ({}, {"servicekey": key}),
        ({"Authorization": f"Basic {basic}"}, {}),
    ]
    for headers, query in forms:
        response = await client.get(
            path, params={**WINDOW, "prefer": "head", **query}, headers=headers
        )
        assert response.status_code == 200, (headers, query, response.text)
        assert "line 0" in response.text
        assert "line 1" in response.text

    # Missing or wrong credentials: 401 in the legacy shape, before any work.
    other = await make_service_key(client, await _account(client))
    wrong_basic = base64.b64encode(b"nobody:").decode()
    for headers, query in [
        ({}, {}),
        ({"servicekey": "sta_" + "0" * 40}, {}),
        ({}, {"servicekey": "nope"}),
        ({"Authorization": f"Basic {wrong_basic}"}, {}),
        ({"Authorization": "Bearer whatever"}, {"servicekey": key}),
    ]:
        response = await client.get(path, params={**WINDOW, **query}, headers=headers)
        assert response.status_code == 401, (headers, query, response.text)
        assert response.json()["status"] == "error"
    # Another account's key sees its own (empty) account, never this one's lines.
    response = await client.get(path, params={**WINDOW, "servicekey": other})
    assert response.status_code == 200
    assert "line 0" not in response.text


async def test_the_query_string_key_is_for_the_exports_only(client: AppClient) -> None:
    account = await _account(client)
    key = await make_service_key(client, account)
    response = await client.get("/v1/config/keys", params={"servicekey": key})
    assert response.status_code == 401
    # Basic with the key as user name works on the management API too (contract.md).
    basic = base64.b64encode(f"{key}:".encode()).decode()
    keys = await client.get("/v1/config/keys", headers={"Authorization": f"Basic {basic}"})
    assert keys.status_code == 200
    assert (await client.get("/v1/config/keys", headers={"apikey": key})).status_code == 200


async def test_from_and_to_may_be_iso_times(client: AppClient) -> None:
    """Issue 18: the schema says a string; an ISO 8601 time is one (``to`` was a 400)."""
    account = await _account(client)
    await insert_lines(client.database_url, account.account_id, _lines(5, app="api"))
    # BASE_MS is 2025-11-22T08:26:40Z; the lines are one second apart from there.
    for params in (
        {"from": BASE_MS - 3_600_000, "to": "2025-11-22T08:26:42Z"},
        {"from": "2025-11-22T09:26:40+01:00", "to": "2025-11-22 08:26:42"},
    ):
        rows = _ndjson(
            await client.get(V1, params={**params, "prefer": "head"}, headers=account.headers)
        )
        assert [row["_line"] for row in rows] == ["line 0", "line 1", "line 2"], params
    refused = await client.get(V1, params={"to": "yesterday"}, headers=account.headers)
    assert refused.status_code == 400
    assert "ISO 8601" in refused.json()["error"]

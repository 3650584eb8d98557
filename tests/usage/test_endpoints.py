"""Usage in the platform's shapes, on SQLite and on PostgreSQL: v1 shares of lines per
app, host and tag; v2 bytes per account (whole UTC days) and per app, host and tag."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from tests.conftest import AppClient
from tests.export.helpers import BASE_MS, insert_lines
from tests.factories import AccountCtx, make_account, make_tenant

from tidegate.logs.store import NewLine

WINDOW = {"from": BASE_MS - 3_600_000, "to": BASE_MS + 3_600_000}


async def _account(client: AppClient) -> AccountCtx:
    return await make_account(client, await make_tenant(client.database_url))


def _line(
    text: str,
    *,
    host: str = "web-1",
    app: str | None = None,
    tags: list[str] | None = None,
    offset: int = 0,
) -> NewLine:
    return NewLine(line=text, ts=BASE_MS + offset, host=host, app=app, tags=tags)


async def _seed(client: AppClient) -> AccountCtx:
    account = await _account(client)
    await insert_lines(
        client.database_url,
        account.account_id,
        [
            *[_line("a" * 10, app="api", tags=["blue", "prod"], offset=i) for i in range(6)],
            *[
                _line("b" * 100, app="API", host="web-2", tags=["red"], offset=10 + i)
                for i in range(2)
            ],
            _line("c" * 1000, app="worker", host="db-1", offset=20),
            _line("no app", host="db-1", offset=21),
        ],
    )
    return account


async def _get(client: AppClient, account: AccountCtx, path: str, **params: Any) -> Any:
    response = await client.get(path, params=params, headers=account.headers)
    assert response.status_code == 200, response.text
    return response.json()


async def test_v1_shares_of_lines(client: AppClient) -> None:
    account = await _seed(client)
    apps = await _get(client, account, "/v1/usage/apps", **WINDOW)
    # 10 lines: "api" and "API" are one app (8), worker 1, and one line has no app.
    assert apps == [
        {"name": "API", "percentage": 80.0, "lines": 8},
        {"name": "worker", "percentage": 10.0, "lines": 1},
    ]
    hosts = await _get(client, account, "/v1/usage/hosts", **WINDOW)
    assert [(row["name"], row["lines"], row["percentage"]) for row in hosts] == [
        ("web-1", 6, 60.0),
        ("db-1", 2, 20.0),
        ("web-2", 2, 20.0),
    ]
    tags = await _get(client, account, "/v1/usage/tags", **WINDOW)
    assert [(row["name"], row["lines"]) for row in tags] == [("blue", 6), ("prod", 6), ("red", 2)]
    assert tags[0]["percentage"] == 60.0

    one = await _get(client, account, "/v1/usage/apps/api", **WINDOW)
    assert one == {"name": "API", "percentage": 80.0, "lines": 8}
    tag = await _get(client, account, "/v1/usage/tags/red", **WINDOW)
    assert tag == {"name": "red", "percentage": 20.0, "lines": 2}
    none = await _get(client, account, "/v1/usage/hosts/nowhere", **WINDOW)
    assert none == {"name": "nowhere", "percentage": 0.0, "lines": 0}
    limited = await _get(client, account, "/v1/usage/hosts", limit=1, **WINDOW)
    assert [row["name"] for row in limited] == ["web-1"]
    # Outside the period: nothing.
    assert await _get(client, account, "/v1/usage/apps", **{"from": 1, "to": 2}) == []


async def test_v2_bytes_per_kind_and_name(client: AppClient) -> None:
    account = await _seed(client)
    day = datetime.fromtimestamp(BASE_MS / 1000, tz=UTC).date().isoformat()
    apps = await _get(client, account, "/v2/usage/apps", **{"from": day, "to": day})
    assert apps["from"] == (
        datetime.fromisoformat(day).replace(tzinfo=UTC) - timedelta(milliseconds=1)
    ).strftime("%Y-%m-%dT%H:%M:%S.999Z")
    assert apps["to"] == f"{(datetime.fromisoformat(day) + timedelta(days=1)).date()}T00:00:00.000Z"
    # Most bytes first: worker 1000, API 6*10 + 2*100 = 260.
    assert apps["results"] == [
        {"name": "worker", "total_bytes": 1000},
        {"name": "API", "total_bytes": 260},
    ]
    tags = await _get(client, account, "/v2/usage/tags", **{"from": day, "to": day})
    assert tags["results"] == [
        {"name": "red", "total_bytes": 200},
        {"name": "blue", "total_bytes": 60},
        {"name": "prod", "total_bytes": 60},
    ]
    host = await _get(
        client, account, "/v2/usage/hosts/DB-1", **{"from": f"{day}T13:00:00Z", "to": day}
    )
    assert host["results"] == {"name": "db-1", "total_bytes": 1006}


async def test_v2_account_bytes_come_from_the_usage_table(client: AppClient) -> None:
    account = await _seed(client)
    today = datetime.now(UTC).date()
    body = await _get(
        client, account, "/v2/usage", **{"from": today.isoformat(), "to": today.isoformat()}
    )
    assert set(body) == {"from", "to", "results"}
    # The lines were received today (their own time is a year earlier).
    assert body["results"] == {"plan_bytes": 6 * 10 + 2 * 100 + 1000 + 6, "restored_bytes": 0}
    yesterday = (today - timedelta(days=1)).isoformat()
    before = await _get(client, account, "/v2/usage", **{"from": yesterday, "to": yesterday})
    assert before["results"]["plan_bytes"] == 0
    # Defaults: the 30 days up to today.
    assert (await _get(client, account, "/v2/usage"))["results"]["plan_bytes"] == 1266


async def test_usage_is_per_account(client: AppClient) -> None:
    await _seed(client)
    other = await _account(client)
    assert await _get(client, other, "/v1/usage/apps", **WINDOW) == []
    day = datetime.fromtimestamp(BASE_MS / 1000, tz=UTC).date().isoformat()
    assert (await _get(client, other, "/v2/usage/hosts", **{"from": day, "to": day}))[
        "results"
    ] == []
    assert (await _get(client, other, "/v2/usage"))["results"]["plan_bytes"] == 0


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/v1/usage/things", {}),
        ("/v1/usage/apps", {"from": "x"}),
        ("/v1/usage/apps", {"from": "20", "to": "10"}),
        ("/v1/usage/apps", {"limit": "0"}),
        ("/v2/usage", {"from": "not a day"}),
        ("/v2/usage", {"from": "2025-02-01", "to": "2025-01-01"}),
        ("/v2/usage", {"from": "2020-01-01", "to": "2025-01-01"}),
        ("/v2/usage/tags", {"limit": "5000"}),
    ],
)
async def test_bad_parameters_are_400(client: AppClient, path: str, params: dict[str, str]) -> None:
    account = await _account(client)
    response = await client.get(path, params=params, headers=account.headers)
    assert response.status_code == 400, response.text
    assert set(response.json()) == {"error", "code", "status"}


async def test_usage_needs_credentials(client: AppClient) -> None:
    for path in ("/v1/usage/apps", "/v2/usage", "/v2/usage/tags/x"):
        assert (await client.get(path)).status_code == 401

"""Black-box runs through real servers: the spec's Throttle worked case through a real
gateway route, and a throttle's limit holding across four workers on Redis."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest
from redis.asyncio import Redis
from tests.conftest import REDIS_PREFIX, REDIS_URL
from tests.gateway.factories import new_account_on, stored_lines, wire

# Limit 1, Window 1 s, Key Field .app, Exclude matching one host value.
WORKED_CASE = {
    "threshold": 1,
    "window_ms": 1000,
    "key_field": ".app",
    "exclude": {"field": ".host", "str_operator": "equal", "value": "trusted-host"},
}
SIX_EVENTS = [
    {"line": "1 first of app a", "app": "a", "host": "web-1"},
    {"line": "2 second of app a", "app": "a", "host": "web-1"},
    {"line": "3 first of app b", "app": "b", "host": "web-2"},
    {"line": "4 second of app b", "app": "b", "host": "web-1"},
    {"line": "5 excluded host", "app": "a", "host": "trusted-host"},
    {"line": "6 third of app a", "app": "a", "host": "web-2"},
]
EXPECTED = ["1 first of app a", "3 first of app b", "5 excluded host"]


@pytest.fixture(params=["sqlite", "postgres"])
def server_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'gateway.sqlite3'}"
    return str(request.getfixturevalue("fresh_pg_url"))


def server_env(database_url: str, **extra: str) -> dict[str, str]:
    return {
        "TIDEGATE_DATABASE_URL": database_url,
        "TIDEGATE_BOOTSTRAP": "0",
        "TIDEGATE_RATE_LIMIT_PER_MINUTE": "0",
        **extra,
    }


async def worked_case_pipeline(http: httpx.AsyncClient, database_url: str) -> Any:
    account = await new_account_on(http, database_url)
    return await wire(
        http,
        account,
        [
            ("throttle", "processor", "throttle", WORKED_CASE, ["source"]),
            ("logs", "destination", "log_analysis", {}, ["throttle"]),
        ],
    )


async def test_worked_case_in_one_request(live_server_factory: Any, server_db: str) -> None:
    server = live_server_factory(env=server_env(server_db))
    async with server.async_client() as http:
        wired = await worked_case_pipeline(http, server_db)
        response = await http.post(wired.url, json=SIX_EVENTS, headers=wired.auth)
        assert response.status_code == 200, response.text
        assert response.json() == {"status": "ok", "events": 6, "pipelines": 1}
    lines = await stored_lines(server_db, wired.account.account_id)
    assert [line.line for line in lines] == EXPECTED
    assert [(line.app, line.host) for line in lines] == [
        ("a", "web-1"),
        ("b", "web-2"),
        ("a", "trusted-host"),
    ]


async def test_worked_case_as_six_requests(live_server_factory: Any, tmp_path: Path) -> None:
    """The throttle's state carries from one request to the next. The window is an hour
    here, not the worked case's second, so the answer cannot depend on how long six
    requests take (the 1 s window itself is tested on a hand clock, in-process)."""
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'six.sqlite3'}"
    server = live_server_factory(env=server_env(database_url))
    async with server.async_client() as http:
        account = await new_account_on(http, database_url)
        wired = await wire(
            http,
            account,
            [
                (
                    "throttle",
                    "processor",
                    "throttle",
                    {**WORKED_CASE, "window_ms": 3_600_000},
                    ["source"],
                ),
                ("logs", "destination", "log_analysis", {}, ["throttle"]),
            ],
        )
        for event in SIX_EVENTS:
            response = await http.post(wired.url, json=event, headers=wired.auth)
            assert response.status_code == 200, response.text
    lines = await stored_lines(database_url, wired.account.account_id)
    assert [line.line for line in lines] == EXPECTED


@pytest.mark.redis
async def test_throttle_limit_holds_across_four_workers_on_redis(
    live_server_factory: Any, server_db: str
) -> None:
    threshold = 40
    server = live_server_factory(env=server_env(server_db, TIDEGATE_REDIS_URL=REDIS_URL), workers=4)
    limits = httpx.Limits(max_connections=32, max_keepalive_connections=0)  # spread over workers
    async with server.async_client(limits=limits) as http:
        account = await new_account_on(http, server_db)
        wired = await wire(
            http,
            account,
            [
                (
                    "t",
                    "processor",
                    "throttle",
                    {"threshold": threshold, "window_ms": 3_600_000},
                    ["source"],
                ),
                ("logs", "destination", "log_analysis", {}, ["t"]),
            ],
        )

        async def send(index: int) -> int:
            batch = [{"line": f"r{index} e{n}"} for n in range(3)]
            response = await http.post(wired.url, json=batch, headers=wired.auth)
            return response.status_code

        # 300 events, at once, over fresh connections spread across the four workers:
        # more than seven times the threshold.
        statuses = await asyncio.gather(*(send(index) for index in range(100)))
    assert statuses == [200] * 100
    lines = await stored_lines(server_db, account.account_id)
    assert len(lines) == threshold
    redis = Redis.from_url(REDIS_URL)
    try:
        keys = [
            key async for key in redis.scan_iter(f"{REDIS_PREFIX}throttle:{{{wired.pipeline_id}:*")
        ]
    finally:
        await redis.aclose()
    assert keys, "the windows live in Redis"

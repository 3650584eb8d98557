"""Tenant patterns against a real server: a `regex_match` built to make a backtracking
engine run for hours, and an exclusion-rule wildcard built the same way, are answered
while the worker keeps serving everyone else (issue 7, items 1 and 2).

The former code took 9 s for `(a+)+$` on 26 `a`s (doubling with each further `a`) and
41 s for `*a*a*a*a*b` on a 200-character host; with 40 `a`s and a 10 s client timeout
these requests, and the health check sent beside them, could never be answered."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
from tests.gateway.factories import new_account_on, stored_lines, wire
from tests.keys.factories import make_ingestion_key

EVIL_REGEX = {"field": ".line", "str_operator": "regex_match", "value": "(a+)+$"}
EVIL_SUBJECT = "a" * 40 + "!"
EVIL_HOST = "a" * 200


def _env(database_url: str) -> dict[str, str]:
    return {
        "TIDEGATE_DATABASE_URL": database_url,
        "TIDEGATE_BOOTSTRAP": "0",
        "TIDEGATE_RATE_LIMIT_PER_MINUTE": "0",
    }


async def _with_health(http: httpx.AsyncClient, attack: Any) -> httpx.Response:
    """Run ``attack`` beside a health check that must answer inside the timeout."""

    async def health() -> None:
        await asyncio.sleep(0.05)  # let the attack reach the worker first
        response = await http.get("/healthz", timeout=15.0)  # generous: see docs/testing.md
        assert response.status_code == 200

    response, _ = await asyncio.gather(attack, health())
    assert isinstance(response, httpx.Response)
    return response


async def test_evil_patterns_do_not_stall_the_worker(
    live_server_factory: Any, tmp_path: Path
) -> None:
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'patterns.sqlite3'}"
    server = live_server_factory(env=_env(database_url))
    async with server.async_client() as http:
        account = await new_account_on(http, database_url, throttle=False)

        # 1a. Simulation of a filter processor.
        simulated = await _with_health(
            http,
            http.post(
                "/v3/pipeline/simulate-processor",
                json={
                    "processor": {"type": "filter", "user_config": {"condition": EVIL_REGEX}},
                    "events": [{"line": EVIL_SUBJECT}, {"line": "aaaa"}],
                },
                headers=account.headers,
            ),
        )
        assert simulated.status_code == 200, simulated.text
        assert simulated.json()["data"]["output"] == [{"line": "aaaa"}]

        # 1b. The live gateway: a filter that drops what the pattern matches.
        wired = await wire(
            http,
            account,
            [
                (
                    "f",
                    "processor",
                    "filter",
                    {"condition": EVIL_REGEX, "action": "drop"},
                    ["source"],
                ),
                ("logs", "destination", "log_analysis", {}, ["f"]),
            ],
        )
        sent = await _with_health(
            http,
            http.post(
                wired.url, json=[{"line": EVIL_SUBJECT}, {"line": "aaaa"}], headers=wired.auth
            ),
        )
        assert sent.status_code == 200, sent.text
        assert [line.line for line in await stored_lines(database_url, account.account_id)] == [
            EVIL_SUBJECT
        ]

        # 2. Ingestion with an exclusion rule whose hosts name backtracks.
        rule = await http.post(
            "/v1/config/ingestion/exclusions",
            json={"title": "evil", "active": True, "hosts": ["*a*a*a*a*b", "*a*a*a*a*a*a*c"]},
            headers=account.headers,
        )
        assert rule.status_code == 200, rule.text
        key = await make_ingestion_key(http, account)
        before = len(await stored_lines(database_url, account.account_id))
        ingested = await _with_health(
            http,
            http.post(
                "/logs/ingest",
                params={"hostname": EVIL_HOST},
                json={"lines": [{"line": "kept"}]},
                headers={"apikey": key},
            ),
        )
        assert ingested.status_code == 200, ingested.text
        stored = await stored_lines(database_url, account.account_id)
        assert [line.line for line in stored[before:]] == ["kept"]

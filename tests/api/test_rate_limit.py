"""Per-key rate limits: 429 in the right shape with Retry-After; shared through Redis."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from redis.asyncio import Redis
from tests.conftest import REDIS_URL, make_settings, open_client

from tidegate.ratelimit import MemoryRateLimiter, RedisRateLimiter


async def test_limit_per_key_in_process(database_url: str, tmp_path: Path) -> None:
    from tests.factories import make_tenant

    http, lifespan = await open_client(
        make_settings(database_url, tmp_path, rate_limit_per_minute=3)
    )
    try:
        one = await make_tenant(database_url)
        two = await make_tenant(database_url)
        statuses = [
            (await http.get("/v3/enterprise", headers=one.headers)).status_code for _ in range(4)
        ]
        assert statuses == [200, 200, 200, 429]
        limited = await http.get("/v3/enterprise", headers=one.headers)
        body = limited.json()
        assert body["status"] == 429
        assert body["code"] == "ETOOMANY"
        assert int(limited.headers["retry-after"]) >= 1
        # Another key has its own budget.
        assert (await http.get("/v3/enterprise", headers=two.headers)).status_code == 200
        # The legacy family renders the legacy shape.
        legacy = await http.get("/v1/config/board", headers=one.headers)
        assert legacy.status_code == 429
        assert legacy.json()["code"] == "TooManyRequests"
    finally:
        await http.aclose()
        await lifespan.__aexit__(None, None, None)


async def test_memory_limiter_refills() -> None:
    limiter = MemoryRateLimiter(per_minute=60)
    now = [0.0]
    limiter._now_ms = lambda: now[0]  # type: ignore[method-assign]
    assert all([await limiter.retry_after("k") is None for _ in range(60)])
    wait = await limiter.retry_after("k")
    assert wait == pytest.approx(1.0)
    now[0] += 1000.0
    assert await limiter.retry_after("k") is None
    assert await limiter.retry_after("k") is not None


@pytest.mark.redis
async def test_redis_limiter_is_exact_under_concurrency() -> None:
    redis = Redis.from_url(REDIS_URL)
    try:
        limiter = RedisRateLimiter(redis, per_minute=25, prefix="tidegate:test:rl:")
        key = f"k-{id(limiter)}"
        results = await asyncio.gather(*(limiter.retry_after(key) for _ in range(60)))
        assert sum(result is None for result in results) == 25
        await redis.delete("tidegate:test:rl:" + key)
    finally:
        await redis.aclose()


async def test_redis_unreachable_fails_open() -> None:
    redis = Redis.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=0.2)
    try:
        limiter = RedisRateLimiter(redis, per_minute=1)
        assert await limiter.retry_after("k") is None
        assert await limiter.retry_after("k") is None
    finally:
        await redis.aclose()


def _enterprise_create(env: dict[str, str]) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "tidegate", "enterprise", "create", "--name", "rl"],
        env=env,
        capture_output=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


@pytest.mark.redis
def test_limit_holds_across_two_servers_sharing_redis(
    live_server_factory: Any, tmp_path: Path
) -> None:
    import os

    db = f"sqlite+aiosqlite:///{tmp_path / 'shared.sqlite3'}"
    env = {
        "TIDEGATE_DATABASE_URL": db,
        "TIDEGATE_REDIS_URL": REDIS_URL,
        "TIDEGATE_RATE_LIMIT_PER_MINUTE": "10",
        "TIDEGATE_BOOTSTRAP": "0",
    }
    first = live_server_factory(env=env)
    second = live_server_factory(env=env)
    created = _enterprise_create({**os.environ, **env, "TIDEGATE_DATA_DIR": str(tmp_path)})
    headers = {"Authorization": f"Token {created['token']}"}
    statuses = [
        httpx.get(
            (first if i % 2 else second).base_url + "/v3/enterprise", headers=headers
        ).status_code
        for i in range(20)
    ]
    # Per-process limiters would let 10 through each; the shared one lets 10 through in all.
    assert statuses.count(200) == 10
    assert statuses.count(429) == 10

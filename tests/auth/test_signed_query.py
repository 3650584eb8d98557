"""Replay protection of signed queries and the failed sign-in counter, in memory and in
a real Redis (shared by every worker and host)."""

from __future__ import annotations

import uuid

import pytest
from redis.asyncio import Redis
from tests.conftest import REDIS_PREFIX, REDIS_URL

from tidegate.auth.signed_query import ReplayGuard, fresh
from tidegate.auth.signin_limit import FailureCounter
from tidegate.errors import RateLimited


def test_ts_must_be_near_the_server_clock() -> None:
    now = 1_800_000_000_000
    assert fresh(str(now - 299_000), window_s=300, now_ms=now) == now - 299_000
    assert fresh(str(now + 299_000), window_s=300, now_ms=now) is not None
    assert fresh(str(now - 301_000), window_s=300, now_ms=now) is None
    wide_now = "".join(chr(0xFF10 + int(digit)) for digit in str(now))  # full-width digits
    for bad in ("", "-1", "1e12", "12.5", "9" * 17, wide_now, f" {now}"):
        assert fresh(bad, window_s=300, now_ms=now) is None, bad


async def test_memory_guard_accepts_each_signature_once_and_stays_bounded() -> None:
    guard = ReplayGuard(max_remembered=3)
    assert await guard.first_use("a", window_s=300)
    assert not await guard.first_use("a", window_s=300)
    assert await guard.first_use("b", window_s=300)
    assert await guard.first_use("c", window_s=300)
    # Full of signatures still inside the window: refuse rather than forget one.
    with pytest.raises(RateLimited):
        await guard.first_use("d", window_s=300)
    assert not await guard.first_use("a", window_s=300)


async def test_memory_guard_forgets_signatures_past_the_window() -> None:
    guard = ReplayGuard(max_remembered=2)
    assert await guard.first_use("a", window_s=0.001)
    assert await guard.first_use("b", window_s=0.001)
    import asyncio

    await asyncio.sleep(0.01)
    assert await guard.first_use("c", window_s=300)  # the expired ones were swept


async def test_redis_guard_is_shared_between_workers() -> None:
    first, second = Redis.from_url(REDIS_URL), Redis.from_url(REDIS_URL)
    try:
        signature = uuid.uuid4().hex
        assert await ReplayGuard(first, redis_prefix=REDIS_PREFIX).first_use(
            signature, window_s=300
        )
        assert not await ReplayGuard(second, redis_prefix=REDIS_PREFIX).first_use(
            signature, window_s=300
        )
        ttl = await first.pttl(f"{REDIS_PREFIX}signed:{signature}")
        assert 590_000 < ttl <= 600_000
    finally:
        await first.aclose()
        await second.aclose()


@pytest.mark.parametrize("backend", ["memory", "redis"])
async def test_failure_counter_blocks_after_the_limit(backend: str) -> None:
    redis = Redis.from_url(REDIS_URL) if backend == "redis" else None
    try:
        counter = FailureCounter(
            max_failures=2, window_s=60, redis=redis, redis_prefix=REDIS_PREFIX
        )
        key = f"email:{uuid.uuid4().hex}@example.com"
        assert not await counter.blocked(key)
        await counter.failed(key)
        assert not await counter.blocked(key)
        await counter.failed(key)
        assert await counter.blocked(key)
        if redis is not None:
            # Another worker's counter sees the same count.
            other = FailureCounter(
                max_failures=2, window_s=60, redis=redis, redis_prefix=REDIS_PREFIX
            )
            assert await other.blocked(key)
            assert 0 < await redis.ttl(f"{REDIS_PREFIX}signin:{key}") <= 60
        await counter.succeeded(key)
        assert not await counter.blocked(key)
    finally:
        if redis is not None:
            await redis.aclose()


async def test_memory_failure_counter_is_bounded() -> None:
    counter = FailureCounter(max_failures=1, window_s=60, max_keys=100)
    for index in range(1_000):
        await counter.failed(f"address:{index}")
    assert len(counter._local._counts) <= 100
    assert await counter.blocked("address:999")

"""GCRA's boundary in exact arithmetic: a limit of N per minute admits a burst of
exactly N at one instant, whatever N and whatever the clock reads (the float version
refused the N-th request for some clock values and some N)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from redis.asyncio import Redis
from tests.conftest import REDIS_PREFIX, REDIS_URL

from tidegate.ratelimit import MemoryRateLimiter, RedisRateLimiter


def _burst(per_minute: int, now_ns: int) -> tuple[int, float | None]:
    """Admitted requests of a burst of per_minute + 1 at one instant, and the wait the
    first refused one was told."""
    limiter = MemoryRateLimiter(per_minute, clock=lambda: now_ns)

    async def run() -> tuple[int, float | None]:
        admitted = 0
        for _ in range(per_minute):
            if await limiter.retry_after("k") is None:
                admitted += 1
        return admitted, await limiter.retry_after("k")

    return asyncio.run(run())


@settings(max_examples=200, deadline=None)
@given(
    per_minute=st.integers(min_value=1, max_value=10_000),
    now_ns=st.integers(min_value=0, max_value=2**63),
)
def test_memory_burst_of_exactly_the_limit(per_minute: int, now_ns: int) -> None:
    admitted, wait = _burst(per_minute, now_ns)
    assert admitted == per_minute
    assert wait is not None
    # The next request is one emission interval away.
    assert wait == pytest.approx(60.0 / per_minute)


def test_memory_limit_of_one_admits_the_first_request() -> None:
    # The float version refused the first request of a limit of 1 at some clock values.
    for now_ns in (0, 1, 999_999, 123_456_789_012_345, 2**62 + 7):
        assert _burst(1, now_ns)[0] == 1


def test_memory_limiter_refills_one_interval_later() -> None:
    now = [10**18 + 12_345]
    limiter = MemoryRateLimiter(7, clock=lambda: now[0])

    async def run() -> None:
        assert [await limiter.retry_after("k") for _ in range(7)] == [None] * 7
        assert await limiter.retry_after("k") == pytest.approx(60 / 7)
        now[0] += 60 * 10**9 // 7  # a nanosecond short of the interval
        assert await limiter.retry_after("k") is not None
        now[0] += 1
        assert await limiter.retry_after("k") is None
        assert await limiter.retry_after("k") is not None

    asyncio.run(run())


@pytest.mark.redis
async def test_redis_burst_of_exactly_the_limit_on_redis_clock() -> None:
    """On Redis's own clock (TIME): the whole burst in one pipeline, which Redis runs back
    to back. Only limits whose emission interval (60 s and 8.6 s) no stall of a loaded
    machine reaches: at 997 a minute the interval is 60 ms, and a burst slowed past it
    was rightly admitted one more (it failed once so). The fixed-clock tests cover every
    other limit and instant."""
    redis = Redis.from_url(REDIS_URL)
    prefix = f"{REDIS_PREFIX}rl:{uuid.uuid4().hex}:"
    try:
        for per_minute in (1, 7):
            limiter = RedisRateLimiter(redis, per_minute=per_minute, prefix=prefix, timeout_s=5)
            key = f"k{per_minute}"
            async with redis.pipeline(transaction=False) as pipe:
                for _ in range(per_minute + 1):
                    await limiter.call_script(key, client=pipe)
                replies = await pipe.execute()
            waits = [limiter.wait_of(reply) for reply in replies]
            assert sum(wait is None for wait in waits) == per_minute, per_minute
            assert waits[-1] is not None
    finally:
        keys = [key async for key in redis.scan_iter(match=prefix + "*")]
        if keys:
            await redis.delete(*keys)
        await redis.aclose()


@pytest.mark.redis
async def test_redis_burst_of_exactly_the_limit_at_any_instant() -> None:
    redis = Redis.from_url(REDIS_URL)
    prefix = f"{REDIS_PREFIX}rl:{uuid.uuid4().hex}:"
    try:
        for per_minute, now_us in [
            (1, 1_763_800_000_123_457),
            (7, 1_763_800_000_000_001),
            (13, 1_763_800_000_999_999),
            (333, 1_763_812_345_678_901),
            (997, 4_000_000_000_000_003),
        ]:
            limiter = RedisRateLimiter(
                redis,
                per_minute=per_minute,
                prefix=prefix,
                timeout_s=5,
                clock_us=lambda now_us=now_us: now_us,
            )
            key = f"k{per_minute}"
            waits = [await limiter.retry_after(key) for _ in range(per_minute + 1)]
            assert waits[:-1] == [None] * per_minute
            assert waits[-1] == pytest.approx(60 / per_minute, abs=1e-6)
    finally:
        keys = [key async for key in redis.scan_iter(match=prefix + "*")]
        if keys:
            await redis.delete(*keys)
        await redis.aclose()

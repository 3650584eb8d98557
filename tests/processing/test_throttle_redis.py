from __future__ import annotations

import socket
import subprocess
import sys
from typing import Any

import pytest
from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import NoScriptError
from tests.processing.throttle_redis_helpers import keys_under
from tests.processing.throttle_reference import PASS, ReferenceThrottle
from tests.waiting import eventually

from tidegate.processing.throttle import (
    ManualClock,
    RedisStore,
    ThrottleConfig,
    ThrottleProcessor,
)

pytestmark = pytest.mark.redis

EXCLUDE_DB = {"field": ".host", "str_operator": "equal", "value": "db-1"}


def on_redis(
    client: Redis, prefix: str, clock: ManualClock | None = None, **config: Any
) -> ThrottleProcessor:
    store_options = {
        name: config.pop(name)
        for name in (
            "fail_open",
            "max_batch",
            "ttl_grace_ms",
            "retry_after_ms",
            "inline_limit_bytes",
        )
        if name in config
    }
    return ThrottleProcessor(
        ThrottleConfig.model_validate(config),
        store=RedisStore(client, key_prefix=prefix, **store_options),
        clock=clock,
    )


async def passes(throttle: ThrottleProcessor, event: dict[str, Any]) -> bool:
    return bool((await throttle.process([event])).passed)


async def test_spec_worked_case(redis_client: Redis, redis_prefix: str) -> None:
    throttle = on_redis(
        redis_client,
        redis_prefix,
        threshold=1,
        window_ms=1000,
        key_field=".app",
        exclude=EXCLUDE_DB,
    )
    events = [
        {"app": "a", "host": "web-1"},
        {"app": "b", "host": "web-1"},
        {"app": "a", "host": "web-2"},
        {"app": "b", "host": "web-2"},
        {"app": "a", "host": "db-1"},
        {"app": "b", "host": "web-3"},
    ]
    result = await throttle.process(events)
    assert result.passed == [events[0], events[1], events[4]]
    assert result.dropped == [events[2], events[3], events[5]]


async def test_engine_cases(redis_client: Redis, redis_prefix: str) -> None:
    clock = ManualClock(0)
    throttle = on_redis(redis_client, redis_prefix, clock, threshold=2, window_ms=5)
    assert await passes(throttle, {})
    assert await passes(throttle, {})
    clock.set(2)
    assert not await passes(throttle, {})
    clock.set(5)
    assert await passes(throttle, {})


async def test_engine_case_with_exclude(redis_client: Redis, redis_prefix: str) -> None:
    clock = ManualClock(0)
    throttle = on_redis(
        redis_client, redis_prefix, clock, threshold=2, window_ms=5, exclude=EXCLUDE_DB
    )
    assert len((await throttle.process([{}, {}])).passed) == 2
    clock.set(2)
    assert await passes(throttle, {"host": "db-1"})
    assert not await passes(throttle, {"host": "web"})


async def test_engine_case_key_buckets(redis_client: Redis, redis_prefix: str) -> None:
    throttle = on_redis(redis_client, redis_prefix, threshold=1, window_ms=5, key_field=".k")
    result = await throttle.process([{"k": "a"}, {"k": "b"}])
    assert len(result.passed) == 2


async def test_server_time_by_default(redis_client: Redis, redis_prefix: str) -> None:
    throttle = on_redis(redis_client, redis_prefix, threshold=2, window_ms=60_000)
    result = await throttle.process([{"i": i} for i in range(5)])
    assert [event["i"] for event in result.passed] == [0, 1]
    assert throttle.is_async
    with pytest.raises(TypeError, match="asynchronous"):
        throttle.process_sync([{}])


async def test_no_admission_lost_within_one_millisecond(
    redis_client: Redis, redis_prefix: str
) -> None:
    clock = ManualClock(1_000)
    throttle = on_redis(redis_client, redis_prefix, clock, threshold=600, window_ms=10)
    first = await throttle.process([{} for _ in range(400)])
    second = await throttle.process([{} for _ in range(400)])  # same millisecond
    assert len(first.passed) == 400
    assert len(second.passed) == 200
    assert await redis_client.hget(f"{redis_prefix}:h", "=") == b"600|1000:600"
    clock.set(1_005)
    assert len((await throttle.process([{} for _ in range(10)])).passed) == 0
    clock.set(1_010)
    assert len((await throttle.process([{} for _ in range(700)])).passed) == 600


async def test_clock_stepping_back(redis_client: Redis, redis_prefix: str) -> None:
    clock = ManualClock(1_000)
    throttle = on_redis(redis_client, redis_prefix, clock, threshold=1, window_ms=10)
    assert await passes(throttle, {})
    clock.set(10)
    assert not await passes(throttle, {})
    clock.set(1_009)
    assert not await passes(throttle, {})
    clock.set(1_010)
    assert await passes(throttle, {})


async def test_keys_carry_a_ttl_and_expire(redis_client: Redis, redis_prefix: str) -> None:
    throttle = on_redis(
        redis_client, redis_prefix, threshold=5, window_ms=100, key_field=".k", ttl_grace_ms=0
    )
    await throttle.process([{"k": str(i)} for i in range(20)])
    keys = await keys_under(redis_client, redis_prefix)
    assert len(keys) == 3  # the watermark, the index and the hash of small buckets
    assert await redis_client.hlen(f"{redis_prefix}:h") == 20
    for key in keys:
        assert 0 < await redis_client.pttl(key) <= 100

    async def expired() -> bool:
        return not await keys_under(redis_client, redis_prefix)

    await eventually(expired, what="the throttle's keys expired in Redis")


async def test_key_cap_fails_open(redis_client: Redis, redis_prefix: str) -> None:
    clock = ManualClock(0)
    throttle = on_redis(
        redis_client, redis_prefix, clock, threshold=1, window_ms=10, key_field=".k", max_keys=2
    )
    result = await throttle.process([{"k": k} for k in ["a", "b", "c", "c", "a"]])
    assert [event["k"] for event in result.passed] == ["a", "b", "c", "c"]
    assert throttle.counters.keys_over_cap == 2
    assert throttle.keys_tracked == 2
    clock.set(10)
    result = await throttle.process([{"k": "c"}, {"k": "c"}])
    assert len(result.passed) == 1
    assert throttle.keys_tracked == 1


async def test_per_key_discarded_counts(redis_client: Redis, redis_prefix: str) -> None:
    throttle = on_redis(
        redis_client,
        redis_prefix,
        threshold=1,
        window_ms=1000,
        key_field=".k",
        discarded_per_key=True,
        discarded_per_key_limit=1,
    )
    await throttle.process([{"k": k} for k in "aaabb"])
    assert throttle.counters.discarded_by_key == {"a": 2}
    assert throttle.counters.discarded_other_keys == 1


async def test_long_and_odd_keys(redis_client: Redis, redis_prefix: str) -> None:
    throttle = on_redis(redis_client, redis_prefix, threshold=1, window_ms=1000, key_field=".k")
    long_key = "x" * 1000
    odd_key = "\ud800 lone surrogate"
    result = await throttle.process(
        [{"k": long_key}, {"k": long_key}, {"k": odd_key}, {"k": odd_key}, {"k": "{tag}:b:="}]
    )
    assert [event["k"] for event in result.passed] == [long_key, odd_key, "{tag}:b:="]
    assert throttle.counters.store_errors == 0


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def unreachable_client() -> Redis:
    return Redis(
        host="127.0.0.1",
        port=closed_port(),
        socket_connect_timeout=0.5,
        retry=Retry(NoBackoff(), 0),
    )


@pytest.mark.parametrize("fail_open", [True, False])
async def test_unreachable_redis_fails_open_or_closed(fail_open: bool) -> None:
    client = unreachable_client()
    try:
        throttle = on_redis(
            client,
            "unused:{x}",
            threshold=1,
            window_ms=1000,
            exclude=EXCLUDE_DB,
            fail_open=fail_open,
        )
        events = [{}, {}, {"host": "db-1"}]
        result = await throttle.process(events)
        counters = throttle.counters
        assert counters.store_errors == 1
        if fail_open:
            assert result.passed == events
            assert counters.failed_open == 2
        else:
            assert result.passed == [events[2]]
            assert result.dropped == [{}, {}]
            assert counters.failed_closed == 2
        assert counters.events_in == 3
        assert counters.passed + counters.discarded == 3
    finally:
        await client.aclose()


class CountingClient:
    """Counts the commands a processor sends; can pretend the script cache is empty."""

    def __init__(self, client: Redis, forget_script: bool = False) -> None:
        self.client = client
        self.calls: list[str] = []
        self.forget_script = forget_script

    async def evalsha(self, *args: Any) -> Any:
        self.calls.append("EVALSHA")
        if self.forget_script:
            self.forget_script = False
            raise NoScriptError("NOSCRIPT No matching script.")
        return await self.client.evalsha(*args)

    async def eval(self, *args: Any) -> Any:
        self.calls.append("EVAL")
        return await self.client.eval(*args)


@pytest.mark.parametrize("forget_script", [False, True])
async def test_one_round_trip_per_batch(
    redis_client: Redis, redis_prefix: str, forget_script: bool
) -> None:
    counting = CountingClient(redis_client, forget_script)
    throttle = ThrottleProcessor(
        ThrottleConfig.model_validate({"threshold": 50, "window_ms": 1000, "key_field": ".k"}),
        store=RedisStore(counting, key_prefix=redis_prefix),  # type: ignore[arg-type]
    )
    result = await throttle.process([{"k": i % 300} for i in range(5000)])
    assert len(result.passed) == 5000
    if forget_script:
        assert counting.calls == ["EVALSHA", "EVAL"]
    else:
        assert counting.calls == ["EVALSHA"]
    counting.calls.clear()
    await throttle.process([{"k": 1}])
    assert counting.calls == ["EVALSHA"]


async def test_batches_longer_than_max_batch_take_several_trips(
    redis_client: Redis, redis_prefix: str
) -> None:
    counting = CountingClient(redis_client)
    throttle = ThrottleProcessor(
        ThrottleConfig.model_validate({"threshold": 10, "window_ms": 1000}),
        store=RedisStore(counting, key_prefix=redis_prefix, max_batch=100),  # type: ignore[arg-type]
    )
    result = await throttle.process([{} for _ in range(250)])
    assert len(result.passed) == 10
    assert counting.calls == ["EVALSHA"] * 3


async def test_excluded_only_batches_skip_redis(redis_client: Redis, redis_prefix: str) -> None:
    counting = CountingClient(redis_client)
    throttle = ThrottleProcessor(
        ThrottleConfig.model_validate({"threshold": 1, "window_ms": 1000, "exclude": EXCLUDE_DB}),
        store=RedisStore(counting, key_prefix=redis_prefix),  # type: ignore[arg-type]
    )
    result = await throttle.process([{"host": "db-1"}] * 3)
    assert len(result.passed) == 3
    assert counting.calls == []


WORKER = """
import asyncio, sys
from redis.asyncio import Redis
from tidegate.processing.throttle import RedisStore, ThrottleConfig, ThrottleProcessor

async def main() -> None:
    prefix, offers, threshold = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    client = Redis.from_url("redis://127.0.0.1:6379/0")
    config = ThrottleConfig.model_validate(
        {"threshold": threshold, "window_ms": 3_600_000, "key_field": ".k"}
    )
    throttle = ThrottleProcessor(config, store=RedisStore(client, key_prefix=prefix))
    sys.stdout.write("ready\\n")
    sys.stdout.flush()
    sys.stdin.readline()
    admitted = 0
    for _ in range(offers // 10):
        result = await throttle.process([{"k": "shared"} for _ in range(10)])
        admitted += len(result.passed)
    print(admitted)
    await client.aclose()

asyncio.run(main())
"""


def test_two_processes_share_one_bucket(redis_prefix: str) -> None:
    threshold = 357
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, redis_prefix, "400", str(threshold)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    try:
        for worker in workers:
            assert worker.stdout is not None
            assert worker.stdout.readline().strip() == "ready"
        for worker in workers:
            assert worker.stdin is not None
            worker.stdin.write("go\n")
            worker.stdin.flush()
        admitted = []
        for worker in workers:
            out, _ = worker.communicate(timeout=60)
            assert worker.returncode == 0
            admitted.append(int(out.strip()))
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
    assert sum(admitted) == threshold


@pytest.mark.parametrize(("retry_after_ms", "attempts"), [(0, 2), (600_000, 1)])
async def test_a_failed_store_is_not_retried_on_every_batch(
    retry_after_ms: int, attempts: int
) -> None:
    client = unreachable_client()
    try:
        throttle = on_redis(
            client, "unused:{x}", threshold=1, window_ms=1000, retry_after_ms=retry_after_ms
        )
        assert len((await throttle.process([{}, {}])).passed) == 2
        assert len((await throttle.process([{}, {}])).passed) == 2
        assert throttle.counters.store_errors == attempts
        assert throttle.counters.failed_open == 4
    finally:
        await client.aclose()


async def test_busy_buckets_move_to_a_list_of_their_own(
    redis_client: Redis, redis_prefix: str
) -> None:
    clock = ManualClock(10_000)
    throttle = on_redis(
        redis_client,
        redis_prefix,
        clock,
        threshold=500,
        window_ms=300,
        key_field=".k",
        inline_limit_bytes=1024,
    )
    reference = ReferenceThrottle(threshold=500, window_ms=300, max_keys=20_000)
    for step in range(1_000):
        clock.set(10_000 + step)
        reference.advance(clock.now_ms())
        events = [{"k": "busy"}, {"k": "busy"}] + ([{"k": "calm"}] if step % 10 == 0 else [])
        expected = [reference.offer(event["k"], None) == PASS for event in events]
        passed = (await throttle.process(events)).passed
        assert [any(e is p for p in passed) for e in events] == expected
    assert await redis_client.hget(f"{redis_prefix}:h", "=busy") == b"L"
    assert await redis_client.llen(f"{redis_prefix}:l:=busy") > 1
    assert (await redis_client.hget(f"{redis_prefix}:h", "=calm") or b"").startswith(b"30|")
    assert 0 < await redis_client.pttl(f"{redis_prefix}:l:=busy") <= 300 + 60_000

"""Throughput and memory of the Throttle processor against peers (not a test).

    python bench/bench_throttle.py

Runs in one process and prints events per second for three workloads:

  (a) global  - one bucket for every event (no key field);
  (b) keys    - 10,000 distinct keys (`key_field: .app`), keys drawn at random;
  (c) exclude - one bucket plus an exclude condition matching about 10% of events;

for tidegate in memory (batches of 1,000 events), tidegate on Redis (one round trip
per batch of 1,000), the `limits` library's moving-window limiter in memory and on
Redis doing the same per-event decisions, and a bare loop that only reads the key and
bumps a dict counter (the floor). Then the peak memory of 100,000 tracked keys.
Needs the Redis server on 127.0.0.1:6379; Redis rows are skipped without it.
"""

from __future__ import annotations

import asyncio
import gc
import random
import sys
import time
import tracemalloc
import uuid
from collections.abc import Callable
from typing import Any

import redis
from limits import RateLimitItemPerSecond
from limits.storage import MemoryStorage, RedisStorage
from limits.strategies import MovingWindowRateLimiter
from redis.asyncio import Redis

from tidegate.processing.conditions import compile_condition
from tidegate.processing.throttle import RedisStore, ThrottleConfig, ThrottleProcessor

REDIS_URL = "redis://127.0.0.1:6379"
BATCH = 1_000
THRESHOLD = {"global": 1_000, "keys": 10, "exclude": 1_000}  # per 1 second window
WINDOW_MS = 1_000
KEYS = 10_000
EXCLUDE = {"field": ".level", "str_operator": "equal", "value": "error"}
CASES = ["global", "keys", "exclude"]
# Events decided per implementation and case: enough for a stable rate, small enough
# that the whole benchmark stays around a minute.
SIZE = {
    "bare loop": 1_000_000,
    "tidegate memory": 1_000_000,
    "tidegate redis": 200_000,
    "limits memory": 100_000,
    "limits redis": 8_000,
}
# Each figure is the best of this many runs: other work on the machine only slows
# runs down, so the fastest is the least disturbed.
REPEATS = 3


def make_events(count: int, seed: int = 7) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    apps = [f"app-{i}" for i in range(KEYS)]
    levels = ["error"] + ["info"] * 9
    return [
        {
            "app": rng.choice(apps),
            "host": f"web-{i % 50}",
            "level": rng.choice(levels),
            "message": "GET /api/v1/items 200",
        }
        for i in range(count)
    ]


def config_for(case: str) -> ThrottleConfig:
    data: dict[str, Any] = {"threshold": THRESHOLD[case], "window_ms": WINDOW_MS}
    if case == "keys":
        data["key_field"] = ".app"
        data["max_keys"] = KEYS
    if case == "exclude":
        data["exclude"] = EXCLUDE
    return ThrottleConfig.model_validate(data)


def timed(run: Callable[[], int]) -> tuple[float, int]:
    gc.collect()
    start = time.perf_counter()
    passed = run()
    return time.perf_counter() - start, passed


def bare_loop(events: list[dict[str, Any]], case: str) -> tuple[float, int]:
    def run() -> int:
        counts: dict[Any, int] = {}
        for event in events:
            key = event.get("app")
            counts[key] = counts.get(key, 0) + 1
        return len(events)

    return timed(run)


def tidegate_memory(events: list[dict[str, Any]], case: str) -> tuple[float, int]:
    throttle = ThrottleProcessor(config_for(case))
    batches = [events[i : i + BATCH] for i in range(0, len(events), BATCH)]

    def run() -> int:
        passed = 0
        process = throttle.process_sync
        for batch in batches:
            passed += len(process(batch).passed)
        return passed

    return timed(run)


def tidegate_redis(events: list[dict[str, Any]], case: str) -> tuple[float, int]:
    prefix = f"tidegate-bench:{{{uuid.uuid4().hex}}}"
    batches = [events[i : i + BATCH] for i in range(0, len(events), BATCH)]

    async def main() -> tuple[float, int]:
        client = Redis.from_url(REDIS_URL)
        throttle = ThrottleProcessor(config_for(case), store=RedisStore(client, key_prefix=prefix))
        await throttle.process(batches[0][:1])  # load the script, open the connection
        start = time.perf_counter()
        passed = 0
        for batch in batches:
            passed += len((await throttle.process(batch)).passed)
        elapsed = time.perf_counter() - start
        if throttle.counters.store_errors:
            raise RuntimeError("Redis errors during the benchmark")
        keys = [key async for key in client.scan_iter(match=f"{prefix}*", count=5000)]
        for i in range(0, len(keys), 5000):
            await client.delete(*keys[i : i + 5000])
        await client.aclose()
        return elapsed, passed

    return asyncio.run(main())


def limits_run(
    limiter: MovingWindowRateLimiter, events: list[dict[str, Any]], case: str, run_id: str
) -> tuple[float, int]:
    item = RateLimitItemPerSecond(THRESHOLD[case], 1)
    excluded = compile_condition(EXCLUDE).predicate if case == "exclude" else None
    keyed = case == "keys"

    def run() -> int:
        passed = 0
        hit = limiter.hit
        for event in events:
            if excluded is not None and excluded(event):
                passed += 1
                continue
            key = event.get("app") or "" if keyed else ""
            passed += hit(item, run_id, key)
        return passed

    return timed(run)


def limits_memory(events: list[dict[str, Any]], case: str) -> tuple[float, int]:
    return limits_run(MovingWindowRateLimiter(MemoryStorage()), events, case, "bench")


def limits_redis(events: list[dict[str, Any]], case: str) -> tuple[float, int]:
    run_id = f"tidegate-bench-{uuid.uuid4().hex}"
    limiter = MovingWindowRateLimiter(RedisStorage(REDIS_URL))
    limiter.hit(RateLimitItemPerSecond(1, 1), run_id, "warm-up")  # load its script
    result = limits_run(limiter, events, case, run_id)
    client = redis.Redis.from_url(REDIS_URL)
    keys = list(client.scan_iter(match=f"*{run_id}*", count=5000))
    for i in range(0, len(keys), 5000):
        client.delete(*keys[i : i + 5000])
    client.close()
    return result


IMPLEMENTATIONS: dict[str, Callable[[list[dict[str, Any]], str], tuple[float, int]]] = {
    "bare loop": bare_loop,
    "tidegate memory": tidegate_memory,
    "tidegate redis": tidegate_redis,
    "limits memory": limits_memory,
    "limits redis": limits_redis,
}


def redis_available() -> bool:
    try:
        client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1)
        ok = bool(client.ping())
        client.close()
        return ok
    except redis.RedisError:
        return False


def peak_memory_of_keys(count: int) -> tuple[int, int]:
    """Peak traced bytes while tidegate (memory) tracks `count` keys, and for limits."""
    events = [{"app": f"user-{i}"} for i in range(count)]
    config = ThrottleConfig.model_validate(
        {"threshold": 10, "window_ms": 60_000, "key_field": ".app", "max_keys": count}
    )
    gc.collect()
    tracemalloc.start()
    throttle = ThrottleProcessor(config)
    for i in range(0, count, BATCH):
        throttle.process_sync(events[i : i + BATCH])
    assert throttle.keys_tracked == count
    _, tidegate_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del throttle

    gc.collect()
    tracemalloc.start()
    limiter = MovingWindowRateLimiter(MemoryStorage())
    item = RateLimitItemPerSecond(10, 60)
    for event in events:
        limiter.hit(item, event["app"])
    _, limits_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return tidegate_peak, limits_peak


def main() -> int:
    started = time.perf_counter()
    have_redis = redis_available()
    events = make_events(max(SIZE.values()))
    rates: dict[str, dict[str, float]] = {}
    for name, implementation in IMPLEMENTATIONS.items():
        if "redis" in name and not have_redis:
            continue
        rates[name] = {}
        for case in CASES:
            best = min(implementation(events[: SIZE[name]], case)[0] for _ in range(REPEATS))
            rates[name][case] = SIZE[name] / best

    print(
        f"Throttle benchmark: Python {sys.version.split()[0]}, batches of {BATCH} events, "
        f"best of {REPEATS} runs,"
    )
    print(
        f"window {WINDOW_MS} ms; threshold {THRESHOLD['global']} (global, exclude), "
        f"{THRESHOLD['keys']} per key ({KEYS:,} keys)"
    )
    print()
    header = f"{'events/second':<18}" + "".join(f"{case:>16}" for case in CASES)
    print(header)
    print("-" * len(header))
    for name, by_case in rates.items():
        print(f"{name:<18}" + "".join(f"{by_case[case]:>16,.0f}" for case in CASES))
    print()

    def ratio_row(label: str, top: str, bottom: str, aim: str) -> None:
        if top not in rates or bottom not in rates:
            print(f"{label:<34} (skipped: Redis unavailable)")
            return
        cells = "".join(f"{rates[top][case] / rates[bottom][case]:>12.1f}x" for case in CASES)
        print(f"{label:<34}{cells}   aim {aim}")

    print(f"{'ratio':<34}" + "".join(f"{case:>13}" for case in CASES))
    ratio_row("tidegate memory / limits memory", "tidegate memory", "limits memory", ">= 10x")
    ratio_row("tidegate redis / limits redis", "tidegate redis", "limits redis", ">= 50x")
    ratio_row("bare loop / tidegate memory", "bare loop", "tidegate memory", "<= 3x")
    print()

    keys = 100_000
    tidegate_peak, limits_peak = peak_memory_of_keys(keys)
    print(f"peak memory tracking {keys:,} keys (tracemalloc, threshold 10, window 60 s):")
    print(
        f"  tidegate memory  {tidegate_peak / 2**20:8.1f} MiB  ({tidegate_peak / keys:,.0f} B/key)"
    )
    print(f"  limits memory    {limits_peak / 2**20:8.1f} MiB  ({limits_peak / keys:,.0f} B/key)")
    print()
    print(f"total time {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

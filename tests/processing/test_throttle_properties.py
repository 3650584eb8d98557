"""The fast throttles against the plain reference model, on random streams.

Random keys (including missing, null, empty and numbers), random exclusions, random
clock steps backwards and forwards, random event times, small windows, thresholds and
key caps so that every rule is exercised often.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis.asyncio import Redis
from tests.processing.throttle_redis_helpers import REDIS_URL, delete_prefix, new_prefix
from tests.processing.throttle_reference import DROP, OVER_CAP, PASS, ReferenceThrottle
from tests.property_sizes import examples

from tidegate.processing.throttle import (
    ManualClock,
    RedisStore,
    ThrottleConfig,
    ThrottleProcessor,
)

MISSING_KEY = object()
KEYS = ["a", "b", "c", "d", None, "", 1, "1", MISSING_KEY]
EXCLUDE = {"field": ".x", "str_operator": "exists"}


def reference_key(value: Any) -> str:
    if value is None or value is MISSING_KEY or value == "":
        return ""
    return str(value)


def make_event(key: Any, excluded: bool, at: int | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {}
    if key is not MISSING_KEY:
        event["k"] = key
    if excluded:
        event["x"] = True
    if at is not None:
        event["ts"] = at
    return event


@dataclass(frozen=True)
class Params:
    threshold: int
    window_ms: int
    max_keys: int

    def config(self, **extra: Any) -> ThrottleConfig:
        return ThrottleConfig.model_validate(
            {
                "threshold": self.threshold,
                "window_ms": self.window_ms,
                "max_keys": self.max_keys,
                "key_field": ".k",
                "exclude": EXCLUDE,
                **extra,
            }
        )

    def reference(self) -> ReferenceThrottle:
        return ReferenceThrottle(self.threshold, self.window_ms, self.max_keys)


params = st.builds(
    Params,
    threshold=st.integers(1, 4),
    window_ms=st.integers(1, 20),
    max_keys=st.integers(1, 4),
)
batch_events = st.lists(st.tuples(st.sampled_from(KEYS), st.booleans()), max_size=10)
# (clock step before the batch, events of the batch); steps go backwards too.
clock_batches = st.lists(st.tuples(st.integers(-15, 15), batch_events), max_size=12)
timed_events = st.lists(
    st.tuples(st.sampled_from(KEYS), st.booleans(), st.none() | st.integers(0, 80)),
    max_size=40,
)


def expected_batch(
    reference: ReferenceThrottle, events: list[tuple[Any, bool]], now: int
) -> tuple[list[bool], int]:
    if any(not excluded for _, excluded in events):
        reference.advance(now)  # the clock is seen with the first decided event
    outcome: list[bool] = []
    over_cap = 0
    for key, excluded in events:
        if excluded:
            outcome.append(True)
            continue
        decision = reference.offer(reference_key(key), None)
        over_cap += decision == OVER_CAP
        outcome.append(decision in (PASS, OVER_CAP))
    return outcome, over_cap


def expected_timed(
    reference: ReferenceThrottle, events: list[tuple[Any, bool, int | None]]
) -> list[bool]:
    outcome: list[bool] = []
    for key, excluded, at in events:
        if excluded:
            outcome.append(True)
            continue
        outcome.append(reference.offer(reference_key(key), at) != DROP)
    return outcome


def passed_mask(events: list[dict[str, Any]], passed: list[Any]) -> list[bool]:
    ids = {id(event) for event in passed}
    return [id(event) in ids for event in events]


@settings(max_examples=examples(500), deadline=None)
@given(p=params, start=st.integers(0, 50), batches=clock_batches, with_exclude=st.booleans())
def test_memory_matches_reference_under_clock_steps(
    p: Params,
    start: int,
    batches: list[tuple[int, list[tuple[Any, bool]]]],
    with_exclude: bool,
) -> None:
    clock = ManualClock(start)
    # Without an exclude condition the state takes its specialised keyed loop.
    config = p.config() if with_exclude else p.config(exclude=None)
    if not with_exclude:
        batches = [(step, [(key, False) for key, _ in spec]) for step, spec in batches]
    throttle = ThrottleProcessor(config, clock=clock)
    reference = p.reference()
    total_over_cap = 0
    for step, spec in batches:
        clock.advance(step)
        events = [make_event(key, excluded) for key, excluded in spec]
        result = throttle.process_sync(events)
        expected, over_cap = expected_batch(reference, spec, clock.now_ms())
        total_over_cap += over_cap
        assert passed_mask(events, result.passed) == expected
        assert len(result.passed) + len(result.dropped) == len(events)
        assert throttle.keys_tracked == reference.keys_tracked
    assert throttle.counters.keys_over_cap == total_over_cap


@settings(max_examples=examples(400), deadline=None)
@given(p=params, spec=timed_events)
def test_memory_matches_reference_in_event_time(
    p: Params, spec: list[tuple[Any, bool, int | None]]
) -> None:
    throttle = ThrottleProcessor(p.config(time_field=".ts"), clock=ManualClock(10**9))
    reference = p.reference()
    events = [make_event(key, excluded, at) for key, excluded, at in spec]
    # Split into uneven batches: batching must not change event-time decisions.
    decided: list[bool] = []
    for start in range(0, len(events), 7):
        chunk = events[start : start + 7]
        decided += passed_mask(chunk, throttle.process_sync(chunk).passed)
    assert decided == expected_timed(reference, spec)
    assert throttle.keys_tracked == reference.keys_tracked


# Bytes of runs a bucket may keep inline in the shared hash: 0 puts every bucket in a
# list of its own at once, 24 moves buckets there after a few runs.
inline_limits = st.sampled_from([0, 24, 4096])


async def _redis_clock_run(
    p: Params,
    start: int,
    batches: list[tuple[int, list[tuple[Any, bool]]]],
    max_batch: int,
    inline_limit: int = 4096,
) -> None:
    client = Redis.from_url(REDIS_URL)
    prefix = new_prefix()
    try:
        clock = ManualClock(start)
        store = RedisStore(
            client, key_prefix=prefix, max_batch=max_batch, inline_limit_bytes=inline_limit
        )
        throttle = ThrottleProcessor(p.config(), store=store, clock=clock)
        reference = p.reference()
        for step, spec in batches:
            clock.advance(step)
            events = [make_event(key, excluded) for key, excluded in spec]
            result = await throttle.process(events)
            expected, _ = expected_batch(reference, spec, clock.now_ms())
            assert passed_mask(events, result.passed) == expected
            assert throttle.counters.store_errors == 0
            if any(not excluded for _, excluded in spec):
                assert throttle.keys_tracked == reference.keys_tracked
    finally:
        await delete_prefix(client, prefix)
        await client.aclose()


@pytest.mark.redis
@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    p=params,
    start=st.integers(0, 50),
    batches=clock_batches,
    max_batch=st.sampled_from([1, 3, 10_000]),
    inline_limit=inline_limits,
)
def test_redis_matches_reference_under_clock_steps(
    p: Params,
    start: int,
    batches: list[tuple[int, list[tuple[Any, bool]]]],
    max_batch: int,
    inline_limit: int,
) -> None:
    asyncio.run(_redis_clock_run(p, start, batches, max_batch, inline_limit))


async def _redis_timed_run(
    p: Params, spec: list[tuple[Any, bool, int | None]], inline_limit: int = 4096
) -> None:
    client = Redis.from_url(REDIS_URL)
    prefix = new_prefix()
    try:
        store = RedisStore(client, key_prefix=prefix, max_batch=5, inline_limit_bytes=inline_limit)
        throttle = ThrottleProcessor(p.config(time_field=".ts"), store=store)
        reference = p.reference()
        events = [make_event(key, excluded, at) for key, excluded, at in spec]
        decided: list[bool] = []
        for start in range(0, len(events), 7):
            chunk = events[start : start + 7]
            decided += passed_mask(chunk, (await throttle.process(chunk)).passed)
        assert decided == expected_timed(reference, spec)
        assert throttle.counters.store_errors == 0
    finally:
        await delete_prefix(client, prefix)
        await client.aclose()


@pytest.mark.redis
@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(p=params, spec=timed_events, inline_limit=inline_limits)
def test_redis_matches_reference_in_event_time(
    p: Params, spec: list[tuple[Any, bool, int | None]], inline_limit: int
) -> None:
    asyncio.run(_redis_timed_run(p, spec, inline_limit))

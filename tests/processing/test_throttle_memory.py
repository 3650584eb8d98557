from __future__ import annotations

import gc
from array import array
from typing import Any

import pytest

from tidegate.processing.throttle import (
    ManualClock,
    MonotonicClock,
    ThrottleConfig,
    ThrottleProcessor,
    parse_event_time,
)


def make(clock: ManualClock | None = None, **config: Any) -> ThrottleProcessor:
    return ThrottleProcessor(
        ThrottleConfig.model_validate(config), clock=clock if clock is not None else ManualClock()
    )


EXCLUDE_DB = {"field": ".host", "str_operator": "equal", "value": "db-1"}


def test_spec_worked_case_six_events_three_out() -> None:
    throttle = make(threshold=1, window_ms=1000, key_field=".app", exclude=EXCLUDE_DB)
    events = [
        {"app": "a", "host": "web-1"},  # first for a: passes
        {"app": "b", "host": "web-1"},  # first for b: passes
        {"app": "a", "host": "web-2"},
        {"app": "b", "host": "web-2"},
        {"app": "a", "host": "db-1"},  # matches Exclude: passes
        {"app": "b", "host": "web-3"},
    ]
    result = throttle.process_sync(events)
    assert result.passed == [events[0], events[1], events[4]]
    assert result.dropped == [events[2], events[3], events[5]]
    assert throttle.counters.excluded == 1
    assert throttle.counters.discarded == 3


def test_engine_case_threshold_two_window_five() -> None:
    clock = ManualClock(0)
    throttle = make(clock, threshold=2, window_ms=5)
    assert throttle.allow({"n": 1})
    assert throttle.allow({"n": 2})
    clock.set(2)
    assert not throttle.allow({"n": 3})
    clock.set(5)
    assert throttle.allow({"n": 4})


def test_engine_case_excluded_event_passes_a_full_bucket() -> None:
    clock = ManualClock(0)
    throttle = make(clock, threshold=2, window_ms=5, exclude=EXCLUDE_DB)
    assert throttle.allow({})
    assert throttle.allow({})
    clock.set(2)
    assert throttle.allow({"host": "db-1"})
    assert not throttle.allow({"host": "web"})
    clock.set(5)
    assert throttle.allow({})
    assert throttle.counters.excluded == 1
    assert throttle.counters.discarded == 1


def test_engine_case_separate_key_buckets() -> None:
    throttle = make(threshold=1, window_ms=5, key_field=".k")
    assert throttle.allow({"k": "a"})
    assert throttle.allow({"k": "b"})
    assert not throttle.allow({"k": "a"})


def test_admission_expires_exactly_window_later() -> None:
    clock = ManualClock(0)
    throttle = make(clock, threshold=1, window_ms=5)
    assert throttle.allow({})
    clock.set(4)
    assert not throttle.allow({})
    clock.set(5)
    assert throttle.allow({})


def test_discarded_events_are_not_recorded() -> None:
    clock = ManualClock(0)
    throttle = make(clock, threshold=1, window_ms=10)
    assert throttle.allow({})
    clock.set(9)
    assert not throttle.allow({})  # if recorded, it would block until t=19
    clock.set(10)
    assert throttle.allow({})


def test_sliding_window_not_fixed_buckets() -> None:
    clock = ManualClock(0)
    throttle = make(clock, threshold=2, window_ms=10)
    assert throttle.allow({})  # t=0
    clock.set(6)
    assert throttle.allow({})  # t=6
    clock.set(9)
    assert not throttle.allow({})
    clock.set(10)
    assert throttle.allow({})  # t=0 expired, t=6 still counts
    assert not throttle.allow({})
    clock.set(16)
    assert throttle.allow({})
    assert throttle.memory_state is not None
    assert throttle.memory_state.held("") == [10, 16]


@pytest.mark.parametrize("event", [{}, {"k": None}, {"k": ""}])
def test_missing_null_and_empty_values_share_the_default_bucket(event: dict[str, Any]) -> None:
    throttle = make(threshold=1, window_ms=100, key_field=".k")
    assert throttle.allow({"k": None})
    assert not throttle.allow(event)
    assert throttle.allow({"k": "x"})


def test_no_key_field_is_one_global_bucket() -> None:
    throttle = make(threshold=2, window_ms=100)
    results = [throttle.allow({"k": str(i)}) for i in range(4)]
    assert results == [True, True, False, False]


@pytest.mark.parametrize(
    ("first", "second"), [(10, "10"), (True, "true"), (1.5, "1.5"), ({"a": 1}, '{"a":1}')]
)
def test_values_compare_by_their_string_form(first: Any, second: Any) -> None:
    throttle = make(threshold=1, window_ms=100, key_field=".k")
    assert throttle.allow({"k": first})
    assert not throttle.allow({"k": second})


def test_nested_key_field() -> None:
    throttle = make(threshold=1, window_ms=100, key_field=".meta.user.id")
    assert throttle.allow({"meta": {"user": {"id": 1}}})
    assert throttle.allow({"meta": {"user": {"id": 2}}})
    assert not throttle.allow({"meta": {"user": {"id": 1}}})
    assert throttle.allow({"meta": "flat"})  # default bucket
    assert not throttle.allow({})


def test_excluded_events_use_no_slot() -> None:
    throttle = make(threshold=1, window_ms=100, exclude=EXCLUDE_DB)
    for _ in range(5):
        assert throttle.allow({"host": "db-1"})
    assert throttle.allow({"host": "web"})
    assert throttle.counters.excluded == 5
    assert throttle.counters.discarded == 0


def test_clock_stepping_back_neither_crashes_nor_admits_extra() -> None:
    clock = ManualClock(1_000)
    throttle = make(clock, threshold=1, window_ms=10)
    assert throttle.allow({})
    clock.set(500)  # a big step back
    assert not throttle.allow({})
    clock.set(-5_000)
    assert not throttle.allow({})
    clock.set(1_009)
    assert not throttle.allow({})
    clock.set(1_010)
    assert throttle.allow({})


def test_time_frozen_after_a_step_back_until_the_clock_catches_up() -> None:
    clock = ManualClock(100)
    throttle = make(clock, threshold=2, window_ms=10)
    assert throttle.allow({})  # at 100
    clock.set(50)
    assert throttle.allow({})  # judged at 100
    clock.set(109)
    assert not throttle.allow({})
    clock.set(110)
    assert throttle.allow({})
    assert throttle.allow({})
    assert not throttle.allow({})


def test_key_cap_fails_open_and_counts() -> None:
    clock = ManualClock(0)
    throttle = make(clock, threshold=1, window_ms=10, key_field=".k", max_keys=2)
    assert throttle.allow({"k": "a"})
    assert throttle.allow({"k": "b"})
    assert throttle.allow({"k": "c"})  # over the cap: passes, untracked
    assert throttle.allow({"k": "c"})
    assert not throttle.allow({"k": "a"})  # tracked keys are still throttled
    assert throttle.counters.keys_over_cap == 2
    assert throttle.keys_tracked == 2
    clock.set(10)  # a and b leave: room again
    assert throttle.allow({"k": "c"})
    assert not throttle.allow({"k": "c"})
    assert throttle.counters.keys_over_cap == 2


def test_idle_keys_are_freed() -> None:
    clock = ManualClock(0)
    throttle = make(clock, threshold=3, window_ms=10, key_field=".k")
    throttle.process_sync([{"k": str(i)} for i in range(1000)])
    assert throttle.keys_tracked == 1000
    clock.set(5)
    throttle.process_sync([{"k": "0"}])  # key 0 refreshed at t=5
    clock.set(10)
    assert throttle.expire_idle() == 1
    assert throttle.keys_tracked == 1
    state = throttle.memory_state
    assert state is not None
    assert state.held("0") == [5]
    assert state.held("1") == []
    clock.set(15)
    throttle.process_sync([])  # nothing decided: the clock is not even read
    assert throttle.keys_tracked == 1
    assert throttle.expire_idle() == 0
    assert state._buckets == {}
    assert state._heap == []


def test_state_is_compact_without_an_object_per_admission() -> None:
    clock = ManualClock(0)
    threshold = 100_000
    throttle = make(clock, threshold=threshold, window_ms=1_000_000)
    gc.collect()
    before = len(gc.get_objects())
    for t in range(threshold):
        clock.set(t)
        assert throttle.allow({})
    clock.set(threshold)
    assert not throttle.allow({})
    gc.collect()
    assert len(gc.get_objects()) - before < 100
    state = throttle.memory_state
    assert state is not None
    bucket = state._buckets[""]
    assert isinstance(bucket.runs, array)
    assert bucket.runs.typecode == "q"
    assert len(bucket.held()) == threshold


def test_same_millisecond_admissions_share_one_run() -> None:
    throttle = make(threshold=100_000, window_ms=1000)
    result = throttle.process_sync([{} for _ in range(150_000)])
    assert len(result.passed) == 100_000
    assert len(result.dropped) == 50_000
    state = throttle.memory_state
    assert state is not None
    assert state._buckets[""].runs is None  # a single run: (time, count)


def test_dropped_output_keeps_order_and_routing_flag() -> None:
    throttle = make(threshold=1, window_ms=100, key_field=".k", reroute_dropped=True)
    events = [{"k": "a", "i": i} for i in range(3)] + [{"k": "b", "i": 3}]
    result = throttle.process_sync(events)
    assert result.passed == [events[0], events[3]]
    assert result.dropped == [events[1], events[2]]
    assert throttle.routes_dropped
    assert ThrottleProcessor.DROPPED_OUTPUT == "dropped"
    assert not make(threshold=1, window_ms=1).routes_dropped


def test_counters() -> None:
    clock = ManualClock(0)
    throttle = make(
        clock, threshold=1, window_ms=100, key_field=".k", exclude=EXCLUDE_DB, max_keys=2
    )
    throttle.process_sync(
        [{"k": "a"}, {"k": "a"}, {"k": "b"}, {"k": "c"}, {"k": "a", "host": "db-1"}]
    )
    assert throttle.counters.snapshot() == {
        "events_in": 5,
        "passed": 4,
        "discarded": 1,
        "excluded": 1,
        "keys_tracked": 2,
        "keys_over_cap": 1,
        "time_missing": 0,
        "store_errors": 0,
        "failed_open": 0,
        "failed_closed": 0,
    }


def test_per_key_discarded_counts_are_opt_in_and_capped() -> None:
    throttle = make(
        threshold=1,
        window_ms=100,
        key_field=".k",
        discarded_per_key=True,
        discarded_per_key_limit=2,
    )
    events = [{"k": key} for key in "aabbbccd"] + [{}, {}]
    throttle.process_sync(events)
    assert throttle.counters.discarded_by_key == {"a": 1, "b": 2}
    assert throttle.counters.discarded_other_keys == 2
    snapshot = throttle.counters.snapshot()
    assert snapshot["discarded_by_key"] == {"a": 1, "b": 2}
    assert make(threshold=1, window_ms=1).counters.discarded_by_key is None


def test_event_time_mode_reads_the_time_field() -> None:
    throttle = make(threshold=1, window_ms=1000, key_field=".k", time_field=".ts")
    events = [
        {"k": "a", "ts": 1_000},
        {"k": "a", "ts": 1_999},
        {"k": "a", "ts": "1970-01-01T00:00:02Z"},  # = 2000 ms: the first expired
        {"k": "a", "ts": "1970-01-01T00:00:02.500+00:00"},
        {"k": "a", "ts": 1_500},  # late: judged at the watermark (2500)
        {"k": "a"},  # no time: judged at the watermark
        {"k": "a", "ts": "3000"},
    ]
    result = throttle.process_sync(events)
    assert result.passed == [events[0], events[2], events[6]]
    assert throttle.counters.time_missing == 1


def test_event_time_replays_deterministically() -> None:
    events = [{"k": str(i % 7), "ts": 1_700_000_000_000 + i * 37} for i in range(2000)]

    def replay() -> list[bool]:
        # The processing clock would differ between runs; event time must not care.
        throttle = ThrottleProcessor(
            ThrottleConfig.model_validate(
                {"threshold": 3, "window_ms": 1000, "key_field": ".k", "time_field": ".ts"}
            ),
            clock=MonotonicClock(),
        )
        passed = throttle.process_sync(events).passed
        ids = {id(event) for event in passed}
        return [id(event) in ids for event in events]

    assert replay() == replay()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1_700_000_000_123, 1_700_000_000_123),
        (1_700_000_000_123.9, 1_700_000_000_123),
        ("1700000000123", 1_700_000_000_123),
        ("2023-11-14T22:13:20.123Z", 1_700_000_000_123),
        ("2023-11-14t22:13:20.123456789z", 1_700_000_000_123),
        ("2023-11-15T00:13:20.123+02:00", 1_700_000_000_123),
        ("2023-11-14 22:13:20Z", 1_700_000_000_000),
        ("2023-11-14T22:13:20", None),  # no offset: ambiguous
        ("yesterday", None),
        (True, None),
        (None, None),
        ({"ms": 1}, None),
        (float("nan"), None),
        (10**20, None),
    ],
)
def test_parse_event_time(value: Any, expected: int | None) -> None:
    assert parse_event_time(value) == expected


async def test_async_api_works_in_memory() -> None:
    throttle = make(threshold=1, window_ms=100)
    result = await throttle.process([{"a": 1}, {"a": 2}])
    assert result.passed == [{"a": 1}]
    assert not throttle.is_async
    assert throttle.store is None


def test_monotonic_clock_is_the_default() -> None:
    throttle = ThrottleProcessor(
        ThrottleConfig.model_validate({"threshold": 2, "window_ms": 60_000})
    )
    assert throttle.process_sync([{}, {}, {}]).dropped == [{}]

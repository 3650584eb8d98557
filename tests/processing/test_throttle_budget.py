"""The worker-wide throttle budget (issue 7, item 6): keys and approximate bytes of
in-memory throttle state across every processor of a worker are capped; past the cap,
new keys fail open and are counted; the charge is given back when windows empty and
when a processor is dropped; the budget always equals what the states hold."""

from __future__ import annotations

import gc
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.property_sizes import examples

from tidegate.processing.throttle import (
    ManualClock,
    ThrottleBudget,
    ThrottleConfig,
    ThrottleProcessor,
)
from tidegate.processing.throttle.budget import ARRAY_BYTES, KEY_BYTES, RUN_BYTES


def make(budget: ThrottleBudget, clock: ManualClock, **config: Any) -> ThrottleProcessor:
    return ThrottleProcessor(ThrottleConfig.model_validate(config), clock=clock, budget=budget)


def held(*processors: ThrottleProcessor) -> tuple[int, int]:
    """Keys and bytes the processors' states hold, counted bucket by bucket."""
    keys = size = 0
    for processor in processors:
        state = processor.memory_state
        assert state is not None
        keys += state.keys_tracked
        size += sum(bucket.charged(key) for key, bucket in state._buckets.items())
        assert state.bytes_charged == sum(
            bucket.charged(key) for key, bucket in state._buckets.items()
        )
    return keys, size


def test_the_key_cap_is_shared_by_every_processor() -> None:
    budget = ThrottleBudget(max_keys=3, max_bytes=1 << 30)
    clock = ManualClock(1_000)
    first = make(budget, clock, threshold=1, window_ms=60_000, key_field=".k")
    second = make(budget, clock, threshold=1, window_ms=60_000, key_field=".k")
    assert len(first.process_sync([{"k": "a"}, {"k": "b"}]).passed) == 2
    # One key of room left for the second processor, whatever its own max_keys says.
    result = second.process_sync([{"k": "x"}, {"k": "y"}, {"k": "z"}])
    assert len(result.passed) == 3  # the refused keys fail open
    assert (budget.keys, budget.keys_refused) == (3, 2)
    assert second.counters.keys_over_cap == 2
    assert second.keys_tracked == 1
    # An untracked key is never throttled while the budget is full.
    assert len(second.process_sync([{"k": "y"}] * 5).passed) == 5
    # A tracked key is still limited.
    assert second.process_sync([{"k": "x"}]).dropped == [{"k": "x"}]
    assert held(first, second) == (budget.keys, budget.bytes)


def test_the_general_loop_obeys_the_budget_too() -> None:
    # An exclude condition takes the general (not the keyed fast) path.
    budget = ThrottleBudget(max_keys=2, max_bytes=1 << 30)
    clock = ManualClock(1_000)
    throttle = make(
        budget,
        clock,
        threshold=1,
        window_ms=60_000,
        key_field=".k",
        exclude={"field": ".skip", "str_operator": "exists"},
    )
    result = throttle.process_sync([{"k": str(n)} for n in range(5)])
    assert len(result.passed) == 5
    assert (budget.keys, budget.keys_refused) == (2, 3)


def test_the_byte_cap_refuses_keys_and_folds_runs() -> None:
    room = 2 * (KEY_BYTES + 1) + ARRAY_BYTES + RUN_BYTES
    budget = ThrottleBudget(max_keys=1_000, max_bytes=room)
    clock = ManualClock(1_000)
    throttle = make(budget, clock, threshold=3, window_ms=60_000, key_field=".k")
    throttle.process_sync([{"k": "a"}, {"k": "b"}])
    clock.advance(1)
    throttle.process_sync([{"k": "a"}])  # a second run for a: the budget is now full
    assert budget.bytes == room
    assert throttle.process_sync([{"k": "c"}]).passed == [{"k": "c"}]
    assert budget.keys_refused == 1
    clock.advance(1)
    # b has room for two more but no bytes for a new run: both fold into its newest run.
    assert len(throttle.process_sync([{"k": "b"}, {"k": "b"}, {"k": "b"}]).passed) == 2
    assert budget.runs_folded == 2
    assert budget.bytes == room
    assert held(throttle) == (budget.keys, budget.bytes)


def test_emptied_windows_and_dropped_processors_give_the_charge_back() -> None:
    budget = ThrottleBudget(max_keys=10, max_bytes=1 << 30)
    clock = ManualClock(1_000)
    kept = make(budget, clock, threshold=5, window_ms=100, key_field=".k")
    dropped = make(budget, clock, threshold=5, window_ms=100_000, key_field=".k")
    for step in range(4):
        kept.process_sync([{"k": "a"}, {"k": f"k{step}"}])
        dropped.process_sync([{"k": "a"}, {"k": "b"}])
        clock.advance(10)
    assert budget.keys == 5 + 2
    clock.advance(1_000)
    kept.expire_idle()
    assert held(kept) == (0, 0)
    assert budget.keys == 2
    del dropped
    gc.collect()
    assert (budget.keys, budget.bytes) == (0, 0)


def test_the_listener_hears_changes_once_per_batch() -> None:
    heard: list[tuple[int, int, int, int]] = []
    budget = ThrottleBudget(max_keys=2, max_bytes=1 << 30, listener=lambda *c: heard.append(c))
    clock = ManualClock(1_000)
    throttle = make(budget, clock, threshold=1, window_ms=10, key_field=".k")
    throttle.process_sync([{"k": "a"}, {"k": "b"}, {"k": "c"}])
    assert heard == [(2, 2 * (KEY_BYTES + 1), 1, 0)]
    throttle.process_sync([{"k": "a"}])  # nothing changes: nothing heard
    assert len(heard) == 1
    clock.advance(100)
    throttle.expire_idle()
    assert heard[-1] == (-2, -2 * (KEY_BYTES + 1), 0, 0)


def test_budget_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ThrottleBudget(max_keys=0, max_bytes=1)


operations = st.lists(
    st.tuples(
        st.integers(0, 2),  # which processor
        st.lists(st.sampled_from("abcdefgh"), max_size=6),  # keys of one batch
        st.integers(0, 40),  # ms to advance before the batch
    ),
    max_size=40,
)


@settings(max_examples=examples(300), deadline=None)
@given(operations=operations, max_keys=st.integers(1, 12), max_bytes=st.integers(1, 3_000))
def test_the_budget_always_equals_what_the_states_hold(
    operations: list[tuple[int, list[str], int]], max_keys: int, max_bytes: int
) -> None:
    budget = ThrottleBudget(max_keys=max_keys, max_bytes=max_bytes)
    clock = ManualClock(1_000)
    exclude = {"field": ".skip", "str_operator": "exists"}
    processors = [
        make(budget, clock, threshold=3, window_ms=50, key_field=".k"),
        make(budget, clock, threshold=2, window_ms=30, key_field=".k", max_keys=4),
        make(budget, clock, threshold=4, window_ms=70, key_field=".k", exclude=exclude),
    ]
    for which, keys, advance in operations:
        clock.advance(advance)
        result = processors[which].process_sync([{"k": key} for key in keys])
        assert len(result.passed) + len(result.dropped) == len(keys)
        assert held(*processors) == (budget.keys, budget.bytes)
        assert budget.keys <= max_keys
        # A run is only charged while the budget is under its bytes; one can cross it.
        assert budget.bytes <= max_bytes + ARRAY_BYTES + RUN_BYTES
    clock.advance(1_000)
    for processor in processors:
        processor.expire_idle()
    assert (budget.keys, budget.bytes) == (0, 0)

"""reduce and aggregate: state across batches, flushed by an injected clock, bounded."""

from __future__ import annotations

from tests.components.helpers import build, run

from tidegate.components.base import BuildContext
from tidegate.components.processors import aggregate, reduce
from tidegate.processing.throttle import ManualClock


def live(clock: ManualClock) -> BuildContext:
    return BuildContext(clock=clock)


async def test_reduce_merges_a_multiline_message_until_ends_when() -> None:
    clock = ManualClock(1_000)
    config = {
        "group_by": [".host"],
        "merge_strategies": {".message": "concat_newline", ".n": "array"},
        "flush_condition": {
            "when": "ends_when",
            "conditional": {"field": ".message", "str_operator": "ends_with", "value": ";"},
        },
    }
    runtime = build("reduce", config, live(clock))
    first = await run("reduce", {}, [
        {"host": "a", "message": "Exception in x", "n": 1, "timestamp": 1},
        {"host": "b", "message": "other", "n": 5},
        {"host": "a", "message": "  at y", "n": 2, "timestamp": 2, "extra": True},
    ], runtime)  # fmt: skip
    assert first.main == []  # held
    second = await run("reduce", {}, [{"host": "a", "message": "  at z;", "n": 3}], runtime)
    assert second.main == [
        {
            "host": "a",
            "message": "Exception in x\n  at y\n  at z;",
            "n": [1, 2, 3],
            "timestamp": 1,
            "timestamp_end": 2,
            "extra": True,
        }
    ]
    # b's group expires once duration_ms (30 s default) has passed.
    clock.advance(30_000)
    third = await run("reduce", {}, [], runtime)
    assert third.main == [{"host": "b", "message": "other", "n": [5]}]
    assert runtime.groups == 0


async def test_reduce_starts_when_max_events_and_default_sums() -> None:
    clock = ManualClock(0)
    starts = build(
        "reduce",
        {
            "max_events": 3,
            "flush_condition": {
                "when": "starts_when",
                "conditional": {"field": ".start", "str_operator": "exists", "value": ""},
            },
        },
        live(clock),
    )
    out = await run("reduce", {}, [
        {"start": 1, "bytes": 1}, {"bytes": 2}, {"start": 2, "bytes": 10}, {"bytes": 1},
        {"bytes": 1},
    ], starts)  # fmt: skip
    assert out.main == [{"start": 1, "bytes": 3}, {"start": 2, "bytes": 12}]


async def test_reduce_is_bounded_in_groups(monkeypatch: object) -> None:
    import pytest

    patch = pytest.MonkeyPatch()
    patch.setattr(reduce, "MAX_GROUPS", 2)
    try:
        runtime = build("reduce", {"group_by": [".k"]}, live(ManualClock(0)))
        out = await run("reduce", {}, [{"k": 1}, {"k": 2}, {"k": 3}], runtime)
        assert out.main == [{"k": 3}]  # past the cap: passes unreduced
        assert runtime.groups == 2
    finally:
        patch.undo()


async def test_reduce_in_simulation_flushes_at_the_end() -> None:
    out = await run("reduce", {"merge_strategies": {".m": "concat"}}, [{"m": "a"}, {"m": "b"}])
    assert out.main == [{"m": "a b"}]


async def test_aggregate_counts_per_group_and_window() -> None:
    clock = ManualClock(60_000)
    config = {
        "interval": 60_000,
        "group_by": [".app"],
        "conditional": {"field": ".level", "str_operator": "equal", "value": "error"},
    }
    runtime = build("aggregate", config, live(clock))
    events = [
        {"app": "web", "level": "error"},
        {"app": "web", "level": "info"},
        {"app": "db", "level": "error"},
        {"app": "web", "level": "ERROR"},
    ]
    first = await run("aggregate", {}, events, runtime)
    assert first.main == [{"app": "web", "level": "info"}]  # not matching: passes
    clock.advance(60_000)
    second = await run("aggregate", {}, [], runtime)
    assert sorted(second.main, key=lambda m: m["tags"]["app"]) == [
        {
            "name": "aggregate",
            "kind": "absolute",
            "value": {"type": "counter", "value": count},
            "tags": {"app": app},
            "timestamp": 60_000,
            "interval_ms": 60_000,
        }
        for app, count in (("db", 1), ("web", 2))
    ]


async def test_aggregate_average_by_event_time_in_simulation() -> None:
    config = {"operation": "average", "field": ".ms", "event_timestamp": True, "interval": 1_000}
    # Event times in epoch milliseconds (the one time rule reads numbers below 10^11 as
    # seconds, so these are real times, not small numbers).
    base = 1_700_000_000_000
    events = [
        {"ms": 10, "timestamp": base + 1_500},
        {"ms": 20, "timestamp": base + 1_900},
        {"ms": 5, "timestamp": base + 2_100},
        {"ms": "x", "timestamp": base + 2_100},
    ]
    out = await run("aggregate", config, events)
    assert out.main[0] == {"ms": "x", "timestamp": base + 2_100}
    assert [(m["timestamp"], m["value"]) for m in out.main[1:]] == [
        (base + 1_000, {"type": "gauge", "value": 15.0}),
        (base + 2_000, {"type": "gauge", "value": 5.0}),
    ]


def test_aggregate_needs_a_field_for_sums_and_has_a_cap() -> None:
    import pytest

    from tidegate.errors import ValidationFailed

    with pytest.raises(ValidationFailed):
        build("aggregate", {"operation": "sum"})
    with pytest.raises(ValidationFailed):
        build("aggregate", {"window_type": "sliding"})
    assert aggregate.MAX_GROUPS == 10_000

"""``aggregate`` in the platform's shape (``window{}``/``evaluate{}``): metric events of
one series folded in tumbling or sliding windows, over a hand-moved clock."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from tests.components.helpers import build, run

from tidegate.components.base import BuildContext, RunContext
from tidegate.components.catalogue import REGISTRY
from tidegate.components.processors import aggregate_windows
from tidegate.components.validation import validate_user_config
from tidegate.errors import ValidationFailed
from tidegate.processing.throttle import ManualClock

T0 = 1_700_000_040_000  # a minute boundary, epoch ms
DIST_1 = {"samples": [{"value": 1, "rate": 1}], "statistic": "histogram"}
DIST_2 = {"samples": [{"value": 2, "rate": 3}], "statistic": "histogram"}
DIST_12 = {"samples": [{"value": 1, "rate": 1}, {"value": 2, "rate": 3}], "statistic": "histogram"}


def metric(
    value: Any,
    *,
    name: str = "requests",
    kind: str = "incremental",
    type_: str = "counter",
    tags: dict[str, str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    event = {"name": name, "kind": kind, "value": {"type": type_, "value": value}}
    event["tags"] = {"host": "web-1"} if tags is None else tags
    return {**event, **extra}


def aggregator(clock: ManualClock, **user_config: Any) -> Any:
    return build("aggregate", user_config, BuildContext(clock=clock))


def values(events: list[dict[str, Any]]) -> list[Any]:
    return [event["value"]["value"] for event in events]


def window(type_: str, interval: int, **more: int) -> dict[str, Any]:
    return {"type": type_, "interval": interval, **more}


async def test_tumbling_sums_a_series_and_leaves_when_its_window_ends() -> None:
    clock = ManualClock(T0 + 5_000)
    runtime = aggregator(clock, window=window("tumbling", 60), evaluate={"operation": "SUM"})
    first = metric(2, namespace="app", metadata={"source": "otel"})
    batch = [first, metric(3), {"message": "not a metric"}, metric("x")]
    out = await run("aggregate", {}, batch, runtime)
    assert out.main == [{"message": "not a metric"}, metric("x")]  # pass unchanged
    clock.advance(20_000)
    assert (await run("aggregate", {}, [metric(5, namespace="app")], runtime)).main == []
    clock.set(T0 + 60_000)  # the window's end
    (summed, other) = (await run("aggregate", {}, [], runtime)).main
    assert summed == {
        **first,
        "value": {"type": "counter", "value": 7},
        "timestamp": T0 + 25_000,
        "metadata": {
            "source": "otel",
            "aggregate": {
                "event_count": 2,
                "start_timestamp": T0,
                "end_timestamp": T0 + 60_000,
                "flush_timestamp": T0 + 60_000,
            },
        },
    }
    assert values([other]) == [3]  # metric(3) has no namespace: another series
    assert runtime.series == 0


async def test_event_time_windows_of_the_past_leave_in_the_same_batch() -> None:
    clock = ManualClock(T0 + 3_600_000)
    runtime = aggregator(
        clock,
        window=window("tumbling", 60),
        evaluate={"operation": "MAX"},
        event_timestamp=".at",
    )
    events = [
        metric(1, type_="gauge", at=T0 + 1_000),
        metric(9, type_="gauge", at="2023-11-14T22:14:30Z"),  # T0 + 30 s, ISO 8601
        metric(4, type_="gauge", at=T0 + 61_000),
        metric(7, type_="gauge", at=T0 + 120_000 + 3_600_000 * 5),  # far ahead: now
    ]
    out = await run("aggregate", {}, events, runtime)
    assert [
        (e["metadata"]["aggregate"]["start_timestamp"], e["value"]["value"]) for e in out.main
    ] == [
        (T0, 9),
        (T0 + 60_000, 4),
    ]
    assert runtime.series == 1  # the event of the future waits in the current window


async def test_sliding_windows_open_at_events_window_min_apart() -> None:
    clock = ManualClock(T0)
    runtime = aggregator(
        clock, window=window("sliding", 10, window_min=5), evaluate={"operation": "AVG"}
    )

    async def at(offset_ms: int, *events: dict[str, Any]) -> list[dict[str, Any]]:
        clock.set(T0 + offset_ms)
        return (await run("aggregate", {}, list(events), runtime)).main

    assert await at(0, metric(1)) == []  # opens [0, 10)
    assert await at(2_000, metric(2)) == []  # within 5 s of a start: folds only
    assert await at(6_000, metric(4)) == []  # folds into [0, 10), opens [6, 16)
    out = await at(11_000, metric(8))  # folds into [6, 16), opens [11, 21); [0, 10) ends
    assert values(out) == [7 / 3]
    assert out[0]["metadata"]["aggregate"]["event_count"] == 3
    assert values(await at(16_000)) == [6.0]
    assert values(await at(21_000)) == [8.0]


async def test_group_by_keeps_the_tags_every_event_shares() -> None:
    clock = ManualClock(T0)
    runtime = aggregator(
        clock,
        window=window("tumbling", 60),
        evaluate={"operation": "SUM"},
        group_by=[".tags.region"],
    )
    events = [
        metric(1, tags={"region": "eu", "host": "a", "tier": "web"}),
        metric(2, tags={"region": "eu", "host": "b", "tier": "web"}),
        metric(4, tags={"region": "us", "host": "c"}),
    ]
    await run("aggregate", {}, events, runtime)
    clock.advance(60_000)
    out = (await run("aggregate", {}, [], runtime)).main
    assert [(e["tags"], e["value"]["value"]) for e in out] == [
        ({"region": "eu", "tier": "web"}, 3),
        ({"region": "us", "host": "c"}, 4),
    ]


async def test_tags_missing_on_some_events_of_a_group() -> None:
    clock = ManualClock(T0)
    runtime = aggregator(
        clock, window=window("tumbling", 60), evaluate={"operation": "SUM"}, group_by=[".app"]
    )
    untagged = {"name": "hits", "kind": "incremental", "value": {"type": "sum", "value": 1}}
    events = [
        {**untagged, "app": "a"},
        {**untagged, "app": "a", "tags": {"x": "1"}},
        {**untagged, "app": "b", "tags": {"x": "1"}},
        {**untagged, "app": "b"},
    ]
    await run("aggregate", {}, events, runtime)
    clock.advance(60_000)
    out = (await run("aggregate", {}, [], runtime)).main
    assert [(e["app"], e.get("tags"), e["value"]["value"]) for e in out] == [
        ("a", None, 2),  # the first event has no tags: none are kept
        ("b", {}, 2),  # the tags every event shares: none
    ]


async def test_a_window_min_longer_than_the_interval_leaves_gaps() -> None:
    clock = ManualClock(T0)
    runtime = aggregator(
        clock, window=window("sliding", 10, window_min=20), evaluate={"operation": "SUM"}
    )
    assert (await run("aggregate", {}, [metric(1)], runtime)).main == []
    clock.advance(15_000)  # [0, 10) has ended; no window may open until 20 s
    late = metric(2)
    out = (await run("aggregate", {}, [late], runtime)).main
    assert out == [late, *out[1:]]
    assert values(out[1:]) == [1]
    clock.advance(5_000)
    assert (await run("aggregate", {}, [metric(4)], runtime)).main == []


async def test_the_conditional_flushes_a_window_early() -> None:
    clock = ManualClock(T0)
    over_ten = {
        "logical_operation": "AND",
        "expressions": [
            {"field": ".value.value", "str_operator": "greater", "value": 10.0, "negate": False}
        ],
    }
    runtime = aggregator(
        clock,
        window=window("tumbling", 60),
        evaluate={"operation": "SUM"},
        conditional=over_ten,
    )
    assert (await run("aggregate", {}, [metric(6)], runtime)).main == []
    clock.advance(1_000)
    early = (await run("aggregate", {}, [metric(5)], runtime)).main
    assert values(early) == [11]
    assert early[0]["metadata"]["aggregate"]["flush_timestamp"] == T0 + 1_000
    clock.advance(1_000)
    assert (await run("aggregate", {}, [metric(1)], runtime)).main == []  # a new window
    clock.set(T0 + 60_000)
    assert values((await run("aggregate", {}, [], runtime)).main) == [1]


@pytest.mark.parametrize(
    ("operation", "events", "expected"),
    [
        # DEFAULT: incremental values add up, an absolute metric keeps its latest value.
        ("DEFAULT", [metric(1), metric(2)], [3]),
        (
            "DEFAULT",
            [metric(5, kind="absolute", type_="gauge"), metric(3, kind="absolute", type_="gauge")],
            [3],
        ),
        (
            "DEFAULT",
            [metric(["a", "b"], type_="set"), metric(["b", "c"], type_="set")],
            [["a", "b", "c"]],
        ),
        (
            "DEFAULT",
            [
                metric({"count": 1}, kind="absolute", type_="histogram"),
                metric({"count": 2}, kind="absolute", type_="histogram"),
            ],
            [{"count": 2}],
        ),
        (
            "DEFAULT",
            [
                metric(["a"], kind="absolute", type_="set"),
                metric(["b"], kind="absolute", type_="set"),
            ],
            [["b"]],
        ),
        (
            "DEFAULT",
            [metric(DIST_1, type_="distribution"), metric(DIST_2, type_="distribution")],
            [DIST_12],
        ),
        (
            "DEFAULT",
            [
                metric(DIST_1, kind="absolute", type_="distribution"),
                metric(DIST_2, kind="absolute", type_="distribution"),
            ],
            [DIST_2],
        ),
        ("MIN", [metric(5), metric(-1.5), metric(3)], [-1.5]),
        ("MAX", [metric(5), metric(-1.5), metric(3)], [5]),
        ("SUM", [metric(0.5), metric(2)], [2.5]),
        (
            "SET_INTERSECTION",
            [metric(["a", "b", "c"], type_="set"), metric(["c", "a"], type_="set")],
            [["a", "c"]],
        ),
        (
            "DIST_CONCAT",
            [metric(DIST_1, type_="distribution"), metric(DIST_2, type_="distribution")],
            [DIST_12],
        ),
    ],
)
async def test_evaluate_operations(
    operation: str, events: list[dict[str, Any]], expected: list[Any]
) -> None:
    config = {"window": window("tumbling", 60), "evaluate": {"operation": operation}}
    out = await run("aggregate", config, events)  # a simulation: flushed at its end
    assert values(out.main) == expected


async def test_values_an_operation_cannot_fold_pass_unchanged() -> None:
    cases: list[tuple[str, dict[str, Any]]] = [
        ("SUM", metric(True)),
        ("AVG", metric(float("inf"))),
        ("SET_INTERSECTION", metric("a", type_="set")),
        ("DIST_CONCAT", metric([1], type_="distribution")),
        ("DEFAULT", metric({"count": 1}, type_="histogram")),  # incremental histogram
        ("SUM", {"name": "n", "kind": "delta", "value": {"type": "counter", "value": 1}}),
        ("SUM", {"name": "n", "kind": "absolute", "value": {"value": 1}}),
        ("SUM", {"name": "n", "kind": "absolute", "value": {"type": "counter"}}),
    ]
    for operation, event in cases:
        config = {"window": window("tumbling", 60), "evaluate": {"operation": operation}}
        assert (await run("aggregate", config, [event])).main == [event], operation


async def test_sets_and_distributions_hold_a_bounded_number_of_members(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(aggregate_windows, "MAX_MEMBERS", 2)
    config = {"window": window("tumbling", 60), "evaluate": {"operation": "DEFAULT"}}
    joined = [metric(["a"], type_="set"), metric(["b", "c"], type_="set")]
    assert values((await run("aggregate", config, joined)).main) == [["a", "b"]]
    too_many = metric(["a", "b", "c"], type_="set")
    assert (await run("aggregate", config, [too_many])).main == [too_many]
    many = {"samples": [{"value": n, "rate": 1} for n in range(3)], "statistic": "summary"}
    out = await run("aggregate", config, [metric(many, type_="distribution")] * 2)
    assert [s["value"] for s in values(out.main)[0]["samples"]] == [0, 1]


async def test_series_past_the_cap_pass_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(aggregate_windows, "MAX_SERIES", 2)
    runtime = aggregator(
        ManualClock(T0), window=window("tumbling", 60), evaluate={"operation": "SUM"}
    )
    events = [metric(1, name=name) for name in ("a", "b", "c")]
    assert (await run("aggregate", {}, events, runtime)).main == [events[2]]
    assert runtime.series == 2


async def test_a_large_batch_runs_in_a_worker_thread_one_batch_at_a_time() -> None:
    clock = ManualClock(T0)
    runtime = aggregator(clock, window=window("tumbling", 60), evaluate={"operation": "SUM"})
    threads: list[bool] = []

    async def offload(function: Callable[[], Any], *, work: int) -> Any:
        threads.append(work >= 2)
        return await asyncio.to_thread(function)

    context = RunContext(offload=offload)
    batches = [[metric(1) for _ in range(50)] for _ in range(4)]
    await asyncio.gather(*(runtime.run(batch, context=context) for batch in batches))
    clock.advance(60_000)
    out = await runtime.run([], context=context)
    assert values(out.main) == [200]
    assert threads == [True] * 4 + [False]


def test_the_platform_shape_is_checked_on_save() -> None:
    base = {"window": window("sliding", 10, window_min=10), "evaluate": {"operation": "AVG"}}
    refusals: list[tuple[dict[str, Any], str, str]] = [
        (
            {**base, "window": window("sliding", 305325235325)},
            "/user_config/window/interval",
            "<= 90000",
        ),
        ({**base, "window": window("hopping", 10)}, "/user_config/window/type", ""),
        (
            {**base, "window": window("sliding", 10, window_min=-1)},
            "/user_config/window/window_min",
            "",
        ),
        ({**base, "evaluate": {"operation": "CUSTOM"}}, "/user_config/evaluate", "a script"),
        (
            {**base, "evaluate": {"operation": "CUSTOM", "script": ""}},
            "/user_config/evaluate",
            "a script",
        ),
        (
            {**base, "evaluate": {"operation": "SUM", "script": "x"}},
            "/user_config/evaluate",
            "CUSTOM only",
        ),
        ({**base, "interval": 5_000}, "/user_config", "interval: not beside"),
        ({**base, "event_timestamp": True}, "/user_config", "field path"),
        ({"window": base["window"]}, "/user_config", "go together"),
        ({"event_timestamp": ".ts"}, "/user_config", "true or false"),
    ]
    for user_config, where, says in refusals:
        with pytest.raises(ValidationFailed) as caught:
            build("aggregate", user_config)
        error = caught.value.errors[0]
        assert error.instance_path == where, user_config
        assert says in error.message, user_config


def test_stored_with_the_defaults_the_provider_reads_back() -> None:
    component = REGISTRY.get("processor", "aggregate")
    assert component.stored is not None

    def stored(user_config: dict[str, Any]) -> dict[str, Any]:
        config = validate_user_config(kind="processor", type_="aggregate", user_config=user_config)
        assert component.stored is not None
        return component.stored(config, user_config)

    tumbling = {"window": window("tumbling", 3600), "evaluate": {"operation": "SUM"}}
    assert stored(tumbling) == {
        "window": window("tumbling", 3600, window_min=3600),
        "evaluate": {"operation": "SUM"},
        "event_timestamp": "timestamp",
    }
    sliding = {
        "window": window("sliding", 3600),
        "evaluate": {"operation": "AVG"},
        "event_timestamp": ".ts",
    }
    assert stored(sliding)["window"] == window("sliding", 3600, window_min=360)
    assert stored(sliding)["event_timestamp"] == ".ts"
    own = {"group_by": [".app"]}
    assert stored(own) == own
    # window_min below interval / 60 is read as interval / 60: at most 60 open windows.
    assert (
        aggregate_windows.effective_slide_s(
            aggregate_windows.Window(type="sliding", interval=600, window_min=1)
        )
        == 10
    )


@pytest.mark.parametrize(
    ("operation", "type_", "events"),
    [
        ("AVG", "gauge", [metric(2, type_="gauge"), metric(5, type_="gauge")]),
        ("SET_INTERSECTION", "set", [metric(["a", "b"], type_="set"), metric(["b"], type_="set")]),
        ("DEFAULT", "distribution", [metric(DIST_1, type_="distribution"),
                                     metric(DIST_2, type_="distribution")]),
    ],
)  # fmt: skip
async def test_windows_saved_as_json_and_restored_fold_on_as_before(
    operation: str, type_: str, events: list[dict[str, Any]]
) -> None:
    """A pipeline alert's judge saves its windows and a new one restores them
    (runtime.alert_events): restored from their JSON, sliding windows fold the next
    events and leave as the windows that were never saved do."""
    clock = ManualClock(T0 + 5_000)
    config = {"window": window("sliding", 60, window_min=20), "evaluate": {"operation": operation}}
    kept, saved = aggregator(clock, **config), aggregator(clock, **config)
    for runtime in (kept, saved):
        await run("aggregate", {}, events[:1], runtime)
    clock.advance(25_000)
    restored = aggregator(clock, **config)
    restored.restore(orjson.loads(orjson.dumps(saved.windows())))
    assert restored.series == saved.series == 1
    outputs = []
    for runtime in (kept, restored):
        await run("aggregate", {}, events[1:], runtime)
        clock.set(T0 + 200_000)
        outputs.append((await run("aggregate", {}, [], runtime)).main)
        clock.set(T0 + 30_000)
    assert outputs[0] == outputs[1]
    assert len(outputs[0]) == 2, type_  # the first window, and the one the second event opened

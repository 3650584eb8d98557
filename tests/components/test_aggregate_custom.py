"""``aggregate`` with ``evaluate.operation: CUSTOM``: each window's events folded
through the tenant's JavaScript ``fn(accum, event)`` in the js-script sandbox (QuickJS),
over a hand-moved clock; a throw or a limit costs that window its event, never the
worker; the script checked on save (the provider's body, and one that does not
compile); a published pipeline on each backend."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from tests.components.factories import Step, delivered_ndjson
from tests.components.helpers import build, run
from tests.conftest import AppClient
from tests.gateway.factories import new_account
from tests.pipelines.factories import assert_v3_error, make_pipeline
from tests.pipelines.provider_bodies import AGGREGATE_TEST_SCRIPT

from tidegate.components.base import BuildContext
from tidegate.components.processors.aggregate_windows import ScriptAggregator
from tidegate.components.processors.javascript import Limits, Sandbox
from tidegate.components.processors.javascript.sandbox import Script, Slot
from tidegate.processing.throttle import ManualClock

T0 = 1_700_000_040_000  # a minute boundary, epoch ms

SUMS = """
function fold(accum, event) {
  if (event.boom) throw new Error("boom");
  if (event.spin) { for (;;) {} }
  if (event.bomb) { const held = []; for (;;) held.push(new Array(100000).fill(1)); }
  if (event.nothing) return null;
  accum.n += event.n;
  accum.seen = accum.metadata.aggregate.event_count + 1;
  return accum;
}
"""


@pytest.fixture
async def sandbox() -> AsyncIterator[Sandbox]:
    own = Sandbox(Limits(processes=1))
    yield own
    own.close()


def custom(clock: ManualClock, sandbox: Sandbox, script: str, **user_config: Any) -> Any:
    config = {"evaluate": {"operation": "CUSTOM", "script": script}, **user_config}
    runtime = build("aggregate", config, BuildContext(clock=clock))
    assert isinstance(runtime, ScriptAggregator)
    runtime._sandbox = sandbox  # a process of the test's own: a spinning script is its
    return runtime


def tumbling(interval: int) -> dict[str, Any]:
    return {"type": "tumbling", "interval": interval}


async def test_a_tumbling_window_folds_its_events_through_the_script(sandbox: Sandbox) -> None:
    clock = ManualClock(T0 + 1_000)
    runtime = custom(clock, sandbox, SUMS, window=tumbling(60), group_by=[".app"])
    first = {"app": "api", "n": 1, "metadata": {"source": "http"}}
    batch = [first, {"app": "web", "n": 10}, {"app": "api", "n": 2}]
    assert (await run("aggregate", {}, batch, runtime)).main == []
    clock.advance(5_000)
    assert (await run("aggregate", {}, [{"app": "api", "n": 4}], runtime)).main == []
    clock.set(T0 + 60_000)
    (api, web) = sorted((await run("aggregate", {}, [], runtime)).main, key=lambda e: e["app"])
    aggregate = {
        "event_count": 3,
        "start_timestamp": T0,
        "end_timestamp": T0 + 60_000,
        "flush_timestamp": T0 + 60_000,
    }
    # The first event is the first accum; each call sees the window's count so far.
    assert api == {
        "app": "api",
        "n": 7,
        "seen": 3,
        "metadata": {"source": "http", "aggregate": aggregate},
    }
    assert web == {
        "app": "web",
        "n": 10,
        "metadata": {"aggregate": {**aggregate, "event_count": 1}},
    }
    assert runtime.series == 0
    assert runtime.errors == 0


async def test_a_failing_call_costs_that_window_its_event_and_the_rest_fold(
    sandbox: Sandbox,
) -> None:
    clock = ManualClock(T0 + 1_000)
    runtime = custom(clock, sandbox, SUMS, window=tumbling(60))
    batch = [
        {"n": 1},
        {"n": 2, "boom": True},
        {"n": 4, "spin": True},  # past its CPU time (100 ms)
        {"n": 8, "bomb": True},  # past its memory (64 MiB)
        {"n": 16, "nothing": True},  # returned null: no accumulated event
        {"n": 32},
    ]
    assert (await run("aggregate", {}, batch, runtime)).main == []
    assert runtime.errors == 4
    clock.set(T0 + 60_000)
    (out,) = (await run("aggregate", {}, [], runtime)).main
    assert out["n"] == 33
    assert out["seen"] == 2
    assert out["metadata"]["aggregate"]["event_count"] == 2
    # The worker and its sandbox go on: the next window folds as before.
    clock.set(T0 + 61_000)
    await run("aggregate", {}, [{"n": 1}, {"n": 1}], runtime)
    clock.set(T0 + 120_000)
    (again,) = (await run("aggregate", {}, [], runtime)).main
    assert again["n"] == 2


async def test_a_hang_past_the_wall_clock_costs_its_window_event_only() -> None:
    """What the engine does not stop: the process is killed, the event lost to its
    window, and the rest of the batch goes to a fresh process with the windows as the
    answers so far left them."""
    slow = Sandbox(Limits(event_cpu_ms=600_000, event_wall_s=1.5, processes=1))
    try:
        clock = ManualClock(T0 + 1_000)
        runtime = custom(clock, slow, SUMS, window=tumbling(60))
        batch = [{"n": 1}, {"n": 2}, {"n": 4, "spin": True}, {"n": 8}]
        assert (await run("aggregate", {}, batch, runtime)).main == []
        assert runtime.errors == 1
        assert slow.killed == 1
        clock.set(T0 + 60_000)
        (out,) = (await run("aggregate", {}, [], runtime)).main
        assert (out["n"], out["metadata"]["aggregate"]["event_count"]) == (11, 3)
    finally:
        slow.close()


async def test_sliding_windows_each_fold_the_events_they_hold(sandbox: Sandbox) -> None:
    clock = ManualClock(T0)
    window = {"type": "sliding", "interval": 10, "window_min": 5}
    runtime = custom(clock, sandbox, SUMS, window=window)

    async def at(offset_ms: int, *events: dict[str, Any]) -> list[dict[str, Any]]:
        clock.set(T0 + offset_ms)
        return (await run("aggregate", {}, list(events), runtime)).main

    assert await at(0, {"n": 1}) == []  # opens [0, 10)
    assert await at(6_000, {"n": 2}) == []  # folds into [0, 10), opens [6, 16)
    (first,) = await at(11_000, {"n": 4})  # folds into [6, 16); [0, 10) ends
    assert first["n"] == 3
    (second,) = await at(17_000)
    assert second["n"] == 6


async def test_the_providers_script_and_a_flush_condition(sandbox: Sandbox) -> None:
    """aggregate_test.go's script, `process(event, metadata)`: called with the
    accumulated event and the incoming one, it marks the accumulated event."""
    clock = ManualClock(T0 + 1_000)
    conditional = {
        "expressions": [{"field": ".foo", "str_operator": "equal", "value": "bar"}],
        "logical_operation": "AND",
    }
    runtime = custom(
        clock, sandbox, AGGREGATE_TEST_SCRIPT, window=tumbling(60), conditional=conditional
    )
    assert (await run("aggregate", {}, [{"n": 1}], runtime)).main == []  # nothing folded
    (out,) = (await run("aggregate", {}, [{"n": 2}], runtime)).main  # folded: foo = bar
    assert out["n"] == 1
    assert out["foo"] == "bar"
    assert out["metadata"]["aggregate"]["event_count"] == 2


async def test_the_script_is_checked_on_save(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    pipeline_id = await make_pipeline(client, account)
    window = {"type": "sliding", "interval": 10, "window_min": 10}
    for script, says in [
        ("function process(event, metadata) { event.foo = ", "SyntaxError"),
        ("throw new Error('at the top')", "at the top"),
        ("while (true) {}", "CPU time budget"),
        ("const x = 1", "must define a function"),
    ]:
        response = await client.post(
            f"/v3/pipeline/{pipeline_id}/transform",
            json={
                "type": "aggregate",
                "user_config": {
                    "window": window,
                    "evaluate": {"operation": "CUSTOM", "script": script},
                },
            },
            headers=account.headers,
        )
        body = assert_v3_error(response, 400)
        (error,) = body["errors"]
        assert error["instance_path"] == "/user_config/evaluate/script", script
        assert "is not valid JavaScript" in error["message"], script
        assert says in error["message"], error


async def test_a_published_pipeline_folds_windows_through_the_script(
    loopback_client: AppClient,
) -> None:
    """Event times in the past: each tumbling window is over when its batch arrives and
    leaves in the same request. A throwing event is lost to its window only."""
    config = {
        "window": {"type": "tumbling", "interval": 60},
        "evaluate": {"operation": "CUSTOM", "script": SUMS},
        "group_by": [".app"],
        "event_timestamp": ".ts",
    }
    steps: list[Step] = [("fold", "processor", "aggregate", config, ["source"])]
    events = [
        {"app": "api", "n": 1, "ts": T0 + 1_000},
        {"app": "api", "n": 2, "ts": T0 + 30_000},
        {"app": "web", "n": 4, "ts": T0 + 59_000},
        {"app": "api", "n": 8, "ts": T0 + 61_000},
        {"app": "api", "n": 16, "ts": T0 + 62_000, "boom": True},
        {"app": "api", "n": 32, "ts": T0 + 63_000},
    ]
    body = await delivered_ndjson(loopback_client, steps, events)
    delivered = [orjson.loads(line) for line in body.splitlines()]
    summary = sorted(
        (
            event["metadata"]["aggregate"]["start_timestamp"] - T0,
            event["app"],
            event["n"],
            event["metadata"]["aggregate"]["event_count"],
        )
        for event in delivered
    )
    assert summary == [(0, "api", 3, 2), (0, "web", 4, 1), (60_000, "api", 40, 2)]


async def test_an_accumulated_event_json_cannot_hold_costs_its_own_window_only(
    sandbox: Sandbox,
) -> None:
    clock = ManualClock(T0 + 1_000)
    runtime = custom(clock, sandbox, SUMS, window=tumbling(60), group_by=[".app"])
    odd = {"app": "odd", "n": 1, "kept": {1, 2}}  # a set: not JSON
    batch = [odd, {"app": "odd", "n": 2}, {"app": "ok", "n": 1}, {"app": "ok", "n": 2}]
    assert (await run("aggregate", {}, batch, runtime)).main == []
    assert runtime.errors == 1  # the step into the odd window only
    assert (await run("aggregate", {}, [{"app": "ok", "n": 4}], runtime)).main == []
    clock.set(T0 + 60_000)
    out = {event["app"]: event["n"] for event in (await run("aggregate", {}, [], runtime)).main}
    assert out == {"odd": 1, "ok": 7}


async def test_a_large_accumulated_event_folds_a_whole_batch(sandbox: Sandbox) -> None:
    """An accumulated event of 64 KiB folding 600 events in one batch: 38 MiB if each
    step sent it back, past a batch's 32 MiB of answers (the steps past it failed); a
    slot's accumulated event crosses the pipe once a batch, so every step folds."""
    script = Script.of(
        "function fold(accum, event) { accum.n += event.n; accum.count += 1; return accum; }"
    )
    slot = Slot({"n": 0, "count": 0, "pad": "x" * 65_536}, 1, T0, T0 + 60_000)
    steps = [(0, {"n": index}) for index in range(600)]
    outcomes = await sandbox.fold(script, [slot], steps, T0)
    assert [outcome.kind for outcome in outcomes] == ["event"] * 600
    assert (slot.accum["n"], slot.accum["count"], slot.count) == (sum(range(600)), 600, 601)
    assert len(slot.accum["pad"]) == 65_536

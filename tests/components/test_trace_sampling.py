"""trace-sampling: whole traces kept or dropped, by a hash of the trace id (head) or by
the first rule the trace matches once its root span arrives (tail); state bounded."""

from __future__ import annotations

import random

import pytest
from tests.components.helpers import build, run

from tidegate.components.base import BuildContext
from tidegate.components.catalogue import REGISTRY
from tidegate.components.processors import trace_sampling
from tidegate.components.validation import validate_user_config
from tidegate.errors import ValidationFailed
from tidegate.processing.throttle import ManualClock

Event = dict[str, object]


def spans(traces: int, per_trace: int = 3) -> list[Event]:
    """``per_trace`` spans of each trace, the root last, shuffled across traces."""
    events: list[Event] = []
    for t in range(traces):
        for s in range(per_trace):
            span: Event = {"trace_id": f"{t:032x}", "span_id": f"{t}-{s}", "status": 200}
            if s < per_trace - 1:
                span["parent_span_id"] = f"{t}-{per_trace - 1}"
            events.append(span)
    return events


def kept_traces(events: list[Event]) -> dict[object, int]:
    counts: dict[object, int] = {}
    for event in events:
        counts[event["trace_id"]] = counts.get(event["trace_id"], 0) + 1
    return counts


async def test_head_keeps_whole_traces_the_same_on_every_worker() -> None:
    events = spans(4_000)
    random.Random(7).shuffle(events)
    config = {"sample_type": "head", "rate": 4}
    one = build("trace-sampling", config)
    other = build("trace-sampling", config)  # another worker, another process
    kept_one: list[Event] = []
    kept_other: list[Event] = []
    for start in range(0, len(events), 500):
        kept_one += (await run("trace-sampling", config, events[start : start + 500], one)).main
    for start in range(0, len(events), 700):  # other batches
        batch = events[start : start + 700]
        kept_other += (await run("trace-sampling", config, batch, other)).main
    traces = kept_traces(kept_one)
    assert set(traces.values()) == {3}, "a trace is kept whole or not at all"
    assert traces == kept_traces(kept_other)
    assert 800 <= len(traces) <= 1_200, len(traces)  # one in 4 of 4,000


async def test_head_defaults_and_a_trace_id_elsewhere() -> None:
    out = await run("trace-sampling", {"sample_type": "head"}, spans(2_000))
    assert 100 <= len(kept_traces(out.main)) <= 300  # default rate 10
    assert len(out.discarded) == 6_000 - len(out.main)

    config = {"sample_type": "head", "trace_id_field": ".span.trace", "rate": 2}
    events: list[Event] = [{"span": {"trace": f"t{n}"}} for n in range(1_000)]
    events.append({"message": "no trace id"})
    out = await run("trace-sampling", config, events)
    assert {"message": "no trace id"} in out.main  # passes unchanged
    assert 400 <= len(out.main) <= 600


async def test_tail_decides_at_the_root_span_by_the_first_rule_matched() -> None:
    config = {
        "sample_type": "tail",
        "conditionals": [
            {
                "conditional": {
                    "expressions": [
                        {"field": ".status", "str_operator": "greater_or_equal", "value": 500}
                    ]
                },
                "rate": 1,
            },
            {
                "conditional": {
                    "expressions": [{"field": ".status", "str_operator": "less", "value": 300}]
                },
                "rate": 5,
            },
        ],
    }
    runtime = build("trace-sampling", config)
    events = spans(1_000)
    for t in range(0, 1_000, 10):  # one trace in 10 has a failing (non-root) span
        events[t * 3]["status"] = 503
    out = await run("trace-sampling", config, events[: len(events) // 2], runtime)
    out2 = await run("trace-sampling", config, events[len(events) // 2 :], runtime)
    traces = kept_traces(out.main + out2.main)
    assert set(traces.values()) == {3}
    failing = {f"{t:032x}" for t in range(0, 1_000, 10)}
    assert failing <= set(traces), "rate 1 keeps every trace with an error"
    ok_kept = len(set(traces) - failing)
    assert 120 <= ok_kept <= 240, ok_kept  # one in 5 of the 900 others

    late = {"trace_id": next(iter(failing)), "parent_span_id": "x", "status": 200}
    assert (await run("trace-sampling", config, [late], runtime)).main == [late]


async def test_tail_drops_a_trace_no_rule_matches_and_waits_for_the_root() -> None:
    config = {
        "sample_type": "tail",
        "trace_id_field": ".t",
        "parent_span_id_field": ".p",
        "conditionals": [
            {
                "conditional": {"expressions": [{"field": ".keep", "str_operator": "exists"}]},
                "rate": 1,
            }
        ],
    }
    clock = ManualClock(0)
    runtime = build("trace-sampling", config, BuildContext(clock=clock))
    child = {"t": "a", "p": "root", "keep": True}
    out = await run("trace-sampling", config, [child, {"t": "b", "p": "r"}], runtime)
    assert out.main == []
    assert out.discarded == []
    out = await run("trace-sampling", config, [{"t": "a"}, {"t": "b"}], runtime)
    assert out.main == [child, {"t": "a"}]
    assert out.discarded == [{"t": "b", "p": "r"}, {"t": "b"}]

    orphan = {"t": "c", "p": "never-arrives", "keep": 1}
    assert (await run("trace-sampling", config, [orphan], runtime)).main == []
    clock.advance(trace_sampling.TRACE_TIMEOUT_MS)
    assert (await run("trace-sampling", config, [], runtime)).main == [orphan]


async def test_tail_state_is_bounded_with_unbounded_trace_ids(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(trace_sampling, "MAX_TRACES", 100)
    monkeypatch.setattr(trace_sampling, "MAX_DECIDED", 500)
    monkeypatch.setattr(trace_sampling, "MAX_SPANS", 50)
    config = {
        "sample_type": "tail",
        "conditionals": [
            {"conditional": {"expressions": [{"field": ".x", "str_operator": "exists"}]}, "rate": 1}
        ],
    }
    runtime = build("trace-sampling", config, BuildContext(clock=ManualClock(0)))
    # 20,000 traces that never send their root span, then one long trace.
    for start in range(0, 20_000, 1_000):
        batch = [
            {"trace_id": n, "parent_span_id": "r", "x": 1} for n in range(start, start + 1_000)
        ]
        out = await run("trace-sampling", config, batch, runtime)
        assert len(out.main) >= 1_000 - 100  # pushed out, decided on what they had
        assert runtime.held_traces <= 100
        assert len(runtime._decided) <= 500
    long = [{"trace_id": "long", "parent_span_id": "r", "x": 1} for _ in range(120)]
    out = await run("trace-sampling", config, long, runtime)
    assert len(out.main) >= 100  # decided at 50 spans; the rest follow the decision


def test_config_per_sample_type_and_what_is_read_back() -> None:
    for refused in (
        {"sample_type": "head", "rate": 1},
        {"sample_type": "head", "conditionals": []},
        {"sample_type": "head", "parent_span_id_field": ".p"},
        {"sample_type": "tail"},
        {
            "sample_type": "tail",
            "rate": 5,
            "conditionals": [{"conditional": {"expressions": []}, "rate": 1}],
        },
        {"sample_type": "middle"},
        {"sample_type": "head", "extra": 1},
    ):
        with pytest.raises(ValidationFailed):
            validate_user_config(kind="processor", type_="trace-sampling", user_config=refused)
    component = REGISTRY.get("processor", "trace-sampling")
    assert component.stored is not None
    head = {"sample_type": "head"}
    config = validate_user_config(kind="processor", type_="trace-sampling", user_config=head)
    assert component.stored(config, head) == {
        "sample_type": "head",
        "trace_id_field": ".trace_id",
        "rate": 10,
    }
    rule = {"conditional": {"expressions": [{"field": ".a", "str_operator": "exists"}]}, "rate": 2}
    tail = {
        "sample_type": "tail",
        "conditionals": [{**rule, "_output_name": ""}, {**rule, "_output_name": "rule-1"}],
    }
    config = validate_user_config(kind="processor", type_="trace-sampling", user_config=tail)
    names = [r["_output_name"] for r in component.stored(config, tail)["conditionals"]]
    assert names == ["rule-1-2", "rule-1"]

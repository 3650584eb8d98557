"""metrics-tag-cardinality-limit: at most ``value_limit`` distinct values per tag of each
metric; past it the event or the tag goes; memory bounded however many values come."""

from __future__ import annotations

import pytest
from tests.components.helpers import build, run

from tidegate.components.processors.metrics_tag_cardinality_limit import (
    MetricsTagCardinalityLimitConfig,
    TagLimiter,
)
from tidegate.components.validation import validate_user_config
from tidegate.errors import ValidationFailed

TYPE = "metrics-tag-cardinality-limit"


def metric(name: str, **tags: object) -> dict[str, object]:
    return {
        "name": name,
        "kind": "absolute",
        "value": {"type": "counter", "value": 1},
        "tags": tags,
    }


async def test_drop_event_past_the_limit_per_metric_and_tag() -> None:
    config = {"value_limit": 2}  # action drop_event by default
    runtime = build(TYPE, config)
    events = [
        metric("requests", host="a"),
        metric("requests", host="b"),
        metric("requests", host="c"),  # a third host: over
        metric("requests", host="a"),  # known value: passes
        metric("errors", host="c"),  # another metric counts apart
        metric("requests", host="b", path="/x"),
        metric("requests", host="d", path="/y"),  # over on host: nothing of it counted
        metric("requests", host="a", path="/z"),
        metric("requests", host="a", path="/w"),  # over on path
        {"message": "not a metric"},
    ]
    out = await run(TYPE, config, events, runtime)
    assert out.main == [events[i] for i in (0, 1, 3, 4, 5, 7, 9)]
    assert out.discarded == [events[i] for i in (2, 6, 8)]


async def test_drop_tag_keeps_the_event_without_that_tag() -> None:
    config = {"value_limit": 1, "action": "drop_tag", "mode": "probabilistic"}
    events = [metric("m", host="a", zone="z"), metric("m", host="b", zone="z")]
    out = await run(TYPE, config, events)
    assert out.main == [metric("m", host="a", zone="z"), metric("m", zone="z")]
    assert out.discarded == []


async def test_tags_and_exclude_tags_choose_what_is_limited() -> None:
    config = {"value_limit": 1, "tags": ["host", "ip"], "exclude_tags": ["ip"]}
    events = [
        metric("m", host="a", ip="1", user="u1"),
        metric("m", host="a", ip="2", user="u2"),  # ip excluded, user not listed
        metric("m", host="b"),
    ]
    out = await run(TYPE, config, events)
    assert out.main == events[:2]
    assert out.discarded == [events[2]]


async def test_memory_stays_bounded_with_unbounded_distinct_values() -> None:
    config = MetricsTagCardinalityLimitConfig(value_limit=50, action="drop_tag")
    limiter = TagLimiter(config, max_keys=100, max_values=1_000)
    for n in range(50_000):
        out = limiter(metric("m", request_id=f"r{n}"))
        assert out is not None
        if n >= 50:
            assert out["tags"] == {}
    assert limiter.keys == 1
    assert limiter.values == 50
    for n in range(20_000):  # unbounded metric names and tag keys too
        limiter(metric(f"m{n}", **{f"k{n % 7}": n}))
        assert limiter.keys <= 100
        assert limiter.values <= 1_000


def test_config() -> None:
    for refused in (
        {},
        {"value_limit": 0},
        {"value_limit": 5, "action": "drop_metric"},
        {"value_limit": 5, "mode": "nope"},
        {"value_limit": 5, "tags": [""]},
        {"value_limit": 5, "tags": ["x"] * 11},
        {"value_limit": 5, "limit": 1},
    ):
        with pytest.raises(ValidationFailed):
            validate_user_config(kind="processor", type_=TYPE, user_config=refused)

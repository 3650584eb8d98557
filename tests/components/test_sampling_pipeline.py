"""trace-sampling, data-profiler and metrics-tag-cardinality-limit inside a published
pipeline: events POSTed to the gateway route reach a real HTTP receiver, and exactly
the ones the processors keep arrive (byte for byte, as ndjson). ``loopback_client``: the
receiver listens on 127.0.0.1."""

from __future__ import annotations

from typing import Any

import orjson
from tests.components.factories import Step, delivered_ndjson
from tests.conftest import AppClient

from tidegate.components.processors.trace_sampling import keeps_trace


def _ndjson(events: list[dict[str, Any]]) -> bytes:
    return b"".join(orjson.dumps(event) + b"\n" for event in events)


async def test_head_sampled_and_profiled_spans_reach_the_destination(
    loopback_client: AppClient,
) -> None:
    spans = [
        {"trace_id": f"{trace:032x}", "span_id": f"{trace}-{span}", "name": "GET /"}
        for trace in range(60)
        for span in range(3)
    ]
    profile = {
        "app_fields": [".app"],
        "host_fields": [".host"],
        "level_fields": [".level"],
        "line_fields": [".name"],
    }
    steps: list[Step] = [
        ("sampler", "processor", "trace-sampling", {"sample_type": "head", "rate": 3}, ["source"]),
        ("profiler", "processor", "data-profiler", profile, ["sampler"]),
    ]
    delivered = await delivered_ndjson(loopback_client, steps, spans)
    kept = [span for span in spans if keeps_trace(span["trace_id"], 3)]
    assert 0 < len(kept) < len(spans)
    assert delivered == _ndjson(kept)


async def test_tag_values_past_the_limit_lose_their_tag(loopback_client: AppClient) -> None:
    metrics = [
        {
            "name": "requests",
            "kind": "incremental",
            "value": {"type": "counter", "value": 1},
            "tags": {"host": f"web-{n}", "app": "api"},
        }
        for n in range(5)
    ]
    config = {"value_limit": 2, "action": "drop_tag", "mode": "exact"}
    steps: list[Step] = [
        ("limit", "processor", "metrics-tag-cardinality-limit", config, ["source"])
    ]
    delivered = await delivered_ndjson(loopback_client, steps, metrics)
    expected = metrics[:2] + [{**m, "tags": {"app": "api"}} for m in metrics[2:]]
    assert delivered == _ndjson(expected)

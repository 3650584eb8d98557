"""The API accepts a node of every processor type, reads it back as sent, and a
pipeline simulation runs each one (wired off the same source)."""

from __future__ import annotations

from typing import Any

from tests.conftest import AppClient
from tests.gateway.factories import new_account, wire
from tests.pipelines.factories import assert_envelope, assert_v3_error

from tidegate.components.catalogue import REGISTRY

EXAMPLES: dict[str, dict[str, Any]] = {
    "filter": {"action": "drop", "conditional": {"field": ".app", "str_operator": "equal", "value": "x"}},
    "throttle": {"threshold": 1, "window_ms": 60_000},
    "route": {"conditionals": [{"label": "web", "output_name": "web", "expressions": [{"field": ".app", "str_operator": "equal", "value": "web"}]}]},
    "sample": {"rate": 2},
    "dedupe": {"fields": [".app"]},
    "drop-fields": {"fields": [".secret"]},
    "map-fields": {"mappings": [{"source_field": ".app", "target_field": ".service"}]},
    "flatten-fields": {"fields": [".meta"]},
    "compact-fields": {},
    "stringify": {},
    "unroll": {"field": ".items"},
    "set-timestamp": {"parsers": [{"field": ".time"}]},
    "parse": {"field": ".message", "target_field": ".kv", "parser": "key_value"},
    "parse-sequentially": {"field": ".message", "target_field": ".p", "parsers": [{"parser": "json"}]},
    "event-to-metric": {"metric_name": "events"},
    "reduce": {"group_by": [".app"], "merge_strategies": {".message": "concat"}},
    "aggregate": {"group_by": [".app"]},
    "encrypt-fields": {"field": ".secret", "key": "0123456789abcdef", "algorithm": "AES-128-GCM", "iv_field": ".iv"},
    "decrypt-fields": {"field": ".secret", "key": "0123456789abcdef", "algorithm": "AES-128-GCM", "iv_field": ".iv"},
    "metrics-tag-cardinality-limit": {"value_limit": 1, "action": "drop_tag"},
    "trace-sampling": {"sample_type": "head", "trace_id_field": ".app", "rate": 3},
    "data-profiler": {"app_fields": [".app"], "host_fields": [".host"], "level_fields": [".level"], "line_fields": [".message"]},
    "js-script": {"script": "function processEvent(e) { e.scripted = true; return e }"},
}  # fmt: skip

EVENT = {
    "app": "web",
    "message": "a=1 b=2",
    "secret": "s",
    "meta": {"k": {"v": 1}},
    "items": [1, 2],
    "time": "2024-01-01T00:00:00Z",
    "empty": None,
}


def test_every_processor_type_has_an_example() -> None:
    assert set(EXAMPLES) == {c.type for c in REGISTRY.of_kind("processor")}


async def test_every_processor_type_is_accepted_and_simulated(client: AppClient) -> None:
    account = await new_account(client)
    steps = [(type_, "processor", type_, config, ["source"]) for type_, config in EXAMPLES.items()]
    steps.append(("out", "destination", "blackhole", {}, ["route.web", "route._unmatched"]))
    wired = await wire(client, account, steps)
    for type_, config in EXAMPLES.items():
        read = await client.get(
            f"/v3/pipeline/{wired.pipeline_id}/processor/{wired.nodes[type_]}",
            headers=account.headers,
        )
        stored = read.json()["data"]["user_config"]
        # A route answers each conditional's output name too, parse-sequentially each
        # parser's.
        items = {"route": "conditionals", "parse-sequentially": "parsers"}.get(type_)
        if items is not None:
            stored = {
                **stored,
                items: [
                    {k: v for k, v in entry.items() if k != "_output_name"}
                    for entry in stored[items]
                ],
            }
        assert stored == config
    response = await client.post(
        f"/v3/pipeline/{wired.pipeline_id}/simulate",
        json={"events": [EVENT, EVENT]},
        headers=account.headers,
    )
    assert response.status_code == 200, response.text
    data = assert_envelope(response.json(), type_="pipeline_simulation", pk="pipeline_id")
    nodes = {node["title"]: node for node in data["nodes"]}
    for type_ in EXAMPLES:
        assert nodes[type_]["received"] == 2, type_
    assert nodes["filter"]["output"] == [EVENT, EVENT]
    assert nodes["route"]["outputs"] == {"web": [EVENT, EVENT], "_unmatched": []}
    assert nodes["sample"]["output"] == [EVENT]
    assert nodes["dedupe"]["output"] == [EVENT]
    assert "secret" not in nodes["drop-fields"]["output"][0]
    assert nodes["map-fields"]["output"][0]["service"] == "web"
    assert nodes["flatten-fields"]["output"][0]["meta"] == {"k.v": 1}
    assert "empty" not in nodes["compact-fields"]["output"][0]
    assert set(nodes["stringify"]["output"][0]) == {"message"}
    assert [e["items"] for e in nodes["unroll"]["output"]] == [1, 2, 1, 2]
    assert nodes["set-timestamp"]["output"][0]["timestamp"] == 1_704_067_200_000
    assert nodes["parse"]["output"][0]["kv"] == {"a": "1", "b": "2"}
    assert nodes["parse-sequentially"]["outputs"] == {"parser-1": [], "_unmatched": [EVENT, EVENT]}
    assert nodes["event-to-metric"]["output"][0]["name"] == "events"
    assert nodes["reduce"]["output"][0]["message"] == "a=1 b=2 a=1 b=2"
    assert nodes["aggregate"]["output"][0]["value"] == {"type": "counter", "value": 2}
    assert nodes["encrypt-fields"]["output"][0]["secret"] != "s"
    assert nodes["metrics-tag-cardinality-limit"]["output"] == [EVENT, EVENT]  # no tags
    assert nodes["trace-sampling"]["output"] == []  # trace "web": not one in 3
    assert nodes["data-profiler"]["output"] == [EVENT, EVENT]
    assert nodes["js-script"]["output"] == [{**EVENT, "scripted": True}] * 2
    assert nodes["out"]["output"] == [EVENT, EVENT]


async def test_outputs_are_checked_against_the_route_config(client: AppClient) -> None:
    account = await new_account(client)
    wired = await wire(
        client, account, [("route", "processor", "route", EXAMPLES["route"], ["source"])]
    )
    unknown = await client.post(
        f"/v3/pipeline/{wired.pipeline_id}/destination",
        json={"type": "blackhole", "inputs": [wired.nodes["route"] + ".nope"]},
        headers=account.headers,
    )
    error = assert_v3_error(unknown, 400)
    assert error["errors"][0]["instance_path"] == "/inputs/0"
    assert "_unmatched" in error["errors"][0]["message"]


async def test_simulate_processor_runs_any_type(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    response = await client.post(
        "/v3/pipeline/simulate-processor",
        json={
            "processor": {"type": "route", "user_config": EXAMPLES["route"]},
            "events": [EVENT, {"app": "x"}],
        },
        headers=account.headers,
    )
    assert response.status_code == 200, response.text
    data = response.json()["data"]
    assert data["outputs"] == {"web": [EVENT], "_unmatched": [{"app": "x"}]}
    unknown = await client.post(
        "/v3/pipeline/simulate-processor",
        json={"processor": {"type": "nope", "user_config": {}}, "events": []},
        headers=account.headers,
    )
    assert assert_v3_error(unknown, 400)["errors"][0]["instance_path"] == "/processor/type"

"""The ``js-script`` processor with the real engine: QuickJS in sandbox processes.

What a script receives and what its result becomes; a throw, an endless loop and a
memory bomb cost only their own event (it passes unchanged) while the others flow; the
wall-clock watchdog and the batch budget; a script loaded once per revision; the
provider's body through the API; a published pipeline; the event loop answering while
a script spins.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from tests.components.factories import Step, delivered_ndjson, wire_source
from tests.components.test_sampling_pipeline import _ndjson
from tests.conftest import AppClient
from tests.gateway.factories import new_account
from tests.pipelines.factories import assert_v3_error, make_pipeline

from tidegate.components.base import NodeOutput, RunContext
from tidegate.components.processors.javascript import Limits, Sandbox, Script, shared_sandbox
from tidegate.components.processors.js_script import JsScript
from tidegate.components.validation import validate_user_config

NOW = 1_700_000_000_000

SCRIPT = """
function processEvent(message, metadata, timestamp, annotations) {
  if (message.drop) return null;
  if (message.boom) throw new Error("boom");
  if (message.spin) { for (;;) {} }
  if (message.bomb) { const held = []; for (;;) held.push(new Array(100000).fill(1)); }
  message.level = (message.level || "info").toUpperCase();
  message.ts = timestamp;
  message.annotations = typeof annotations;
  metadata.seen = true;
  return message;
}
"""


def _done(event: dict[str, Any], ts: int) -> dict[str, Any]:
    """``event`` as SCRIPT returns it."""
    level = str(event.get("level", "info")).upper()
    metadata = {**event.get("metadata", {}), "seen": True}
    return {**event, "level": level, "ts": ts, "annotations": "object", "metadata": metadata}


async def _run(
    script: str, events: list[dict[str, Any]], sandbox: Sandbox | None = None
) -> tuple[NodeOutput, JsScript]:
    config = validate_user_config(
        kind="processor", type_="js-script", user_config={"script": script}
    )
    runtime = JsScript(Script.of(config.script), sandbox)  # type: ignore[attr-defined]
    frozen = [repr(event) for event in events]
    output = await runtime.run(events, context=RunContext(now_ms=NOW))
    assert [repr(event) for event in events] == frozen  # never modified in place
    return output, runtime


@pytest.fixture
async def one_process() -> AsyncIterator[Sandbox]:
    sandbox = Sandbox(Limits(processes=1))
    yield sandbox
    sandbox.close()


async def test_events_transformed_dropped_and_failures_cost_only_their_own() -> None:
    events = [
        {"n": 1, "level": "warn", "timestamp": 5},
        {"drop": True},
        {"n": 2, "boom": True},
        {"n": 3, "spin": True},
        {"n": 4},
        {"n": 5, "bomb": True},
        {"n": 6, "metadata": {"headers": {"a": "b"}}},
    ]
    output, runtime = await _run(SCRIPT, events)
    assert output.main == [
        _done(events[0], 5),
        events[2],  # threw
        events[3],  # ran past its CPU time
        _done(events[4], NOW),  # no timestamp: the batch's time
        events[5],  # ran past its memory limit
        _done(events[6], NOW),  # its own metadata object, changed
    ]
    assert output.discarded == [events[1]]
    assert (output.received, runtime.errors) == (7, 3)


async def test_what_the_function_returns_becomes_the_event() -> None:
    script = """
    function processEvent(e) {
      switch (e.give) {
        case "text": return "plain text";
        case "number": return 42;
        case "array": return [1, 2];
        case "new": return {fresh: true};
        case "nothing": return;
        case "promise": return Promise.resolve(e);
        case "bigint": return {n: 1n};
      }
    }
    """
    kinds = ["text", "number", "array", "new", "nothing", "promise", "bigint"]
    events = [{"give": kind} for kind in kinds]
    output, runtime = await _run(script, events)
    assert output.main == [
        {"message": "plain text"},
        {"message": 42},
        {"message": [1, 2]},
        {"fresh": True},
        *events[4:],  # undefined, a Promise, a value JSON cannot hold: unchanged
    ]
    assert runtime.errors == 3


async def test_one_function_of_any_name_and_a_quiet_console() -> None:
    script = "function reshape(e) { console.log('seen', e); e.ok = true; return e }"
    output, _runtime = await _run(script, [{"a": 1}])
    assert output.main == [{"a": 1, "ok": True}]


async def test_the_provider_testdata_script_passes_events_unchanged() -> None:
    # testdata/processors/script_execution.json calls e.skip(), which events lack.
    script = "function processEvent(e) {\n if (e.skip()) {\n return null \n} return e }"
    events = [{"a": 1}, {"b": 2}]
    output, runtime = await _run(script, events)
    assert (output.main, runtime.errors) == (events, 2)


async def test_loaded_once_then_afresh_after_a_limit(one_process: Sandbox) -> None:
    script = "var calls = 0; function processEvent(e) { calls++; if (e.spin) for (;;) {} e.calls = calls; return e }"
    first, _ = await _run(script, [{}, {}], one_process)
    second, _ = await _run(script, [{}], one_process)
    # The same global state across events and batches: the script was loaded once.
    assert [e["calls"] for e in first.main + second.main] == [1, 2, 3]
    third, _ = await _run(script, [{"spin": True}, {}], one_process)
    # Past a limit the script's runtime is thrown away: loaded afresh for the next event.
    assert third.main == [{"spin": True}, {"calls": 1}]
    assert one_process.started == 1


async def test_each_limit_says_which_it_was(one_process: Sandbox) -> None:
    outcomes = await one_process.run(
        Script.of(SCRIPT), [{"spin": True}, {"bomb": True}, {"boom": True}, {}], NOW
    )
    assert [o.reason for o in outcomes[:3]] == [
        "the function ran past its CPU time budget (100 ms)",
        "the function ran past its memory limit (64 MiB)",
        "Error: boom",
    ]
    assert outcomes[3].kind == "event"


async def test_a_hang_past_the_wall_clock_is_stopped_and_the_rest_flows() -> None:
    # A CPU budget the engine would not reach: the watchdog (wall clock) stops it.
    sandbox = Sandbox(Limits(event_cpu_ms=600_000, event_wall_s=1.5, processes=1))
    try:
        script = "function processEvent(e) { if (e.spin) for (;;) {} e.ok = true; return e }"
        outcomes = await sandbox.run(Script.of(script), [{}, {"spin": 1}, {}], NOW)
    finally:
        sandbox.close()
    assert [o.kind for o in outcomes] == ["event", "failed", "event"]
    assert "did not answer within 1.5 s" in outcomes[1].reason
    assert outcomes[2].event == {"ok": True}
    assert (sandbox.started, sandbox.killed) == (2, 1)


async def test_past_the_batch_cpu_budget_the_rest_passes_unchanged() -> None:
    sandbox = Sandbox(Limits(batch_cpu_ms=150, processes=1))
    try:
        script = "function processEvent(e) { if (e.spin) for (;;) {} e.ok = true; return e }"
        events = [{"spin": 1}, {"spin": 2}, {"spin": 3}, {"n": 1}, {"n": 2}]
        output, runtime = await _run(script, events, sandbox)
    finally:
        sandbox.close()
    assert output.main == events
    assert runtime.errors == 5


async def test_the_sandbox_says_why_a_script_does_not_load(one_process: Sandbox) -> None:
    assert await one_process.check(Script.of("function processEvent(e) { return e }")) is None
    assert await one_process.check(Script.of("const processEvent = (e) => e")) is None
    syntax = await one_process.check(Script.of("THIS IS NOT VALID"))
    assert syntax is not None
    assert syntax.startswith("SyntaxError")
    looping = await one_process.check(Script.of("for (;;) {}"))
    assert looping == "the script's top level ran past its CPU time budget (1000 ms)"
    throwing = await one_process.check(Script.of("throw new TypeError('no')"))
    assert throwing == "TypeError: no"
    two = await one_process.check(Script.of("function a(e) {} function b(e) {}"))
    assert two is not None
    assert "must define a function processEvent" in two


async def test_provider_create_read_update_delete(client: AppClient) -> None:
    """processors/script_execution_test.go: create, then update to the heredoc script
    with an input, with the generation_id read; no drift in between."""
    account = await new_account(client, throttle=False)
    pipeline_id = await make_pipeline(client, account)
    base = f"/v3/pipeline/{pipeline_id}/transform"
    create = {
        "type": "js-script",
        "title": "processor title",
        "description": "processor desc",
        "inputs": [],
        "user_config": {"script": "function processEvent(e) { return e }"},
        "generation_id": 0,
    }
    created = await client.post(base, json=create, headers=account.headers)
    assert created.status_code == 201, created.text
    node = created.json()["data"]
    read = (await client.get(f"{base}/{node['id']}", headers=account.headers)).json()["data"]
    assert read["user_config"] == create["user_config"]
    assert read["generation_id"] == 0
    heredoc = "function processEvent(e) {\n  if (e.skip) {\n    return null\n  }\n  return e\n}\n"
    update = {
        **create,
        "id": node["id"],
        "title": "new title",
        "user_config": {"script": heredoc},
    }
    updated = await client.put(f"{base}/{node['id']}", json=update, headers=account.headers)
    assert updated.status_code == 200, updated.text
    assert updated.json()["data"]["user_config"] == {"script": heredoc}
    assert updated.json()["data"]["generation_id"] == 1
    stale = await client.put(f"{base}/{node['id']}", json=update, headers=account.headers)
    assert stale.status_code == 409
    invalid = {**update, "generation_id": 1, "user_config": {"script": "THIS IS NOT VALID"}}
    refused = await client.put(f"{base}/{node['id']}", json=invalid, headers=account.headers)
    body = assert_v3_error(refused, 400)
    assert "script is not valid JavaScript" in body["message"]
    assert body["errors"][0]["instance_path"] == "/user_config/script"
    deleted = await client.delete(f"{base}/{node['id']}", headers=account.headers)
    assert deleted.status_code in (200, 204)


async def test_a_top_level_that_never_ends_is_refused_on_save(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    pipeline_id = await make_pipeline(client, account)
    response = await client.post(
        f"/v3/pipeline/{pipeline_id}/processor",
        json={"type": "js-script", "user_config": {"script": "while (true) {}"}},
        headers=account.headers,
    )
    body = assert_v3_error(response, 400)
    assert "CPU time budget" in body["errors"][0]["message"]


async def test_a_published_pipeline_delivers_what_the_script_returns(
    loopback_client: AppClient,
) -> None:
    events = [
        {"n": 1, "level": "warn"},
        {"n": 2, "drop": True},
        {"n": 3, "boom": True},
        {"n": 4, "spin": True},
        {"n": 5, "bomb": True},
        {"n": 6},
    ]
    events = [{**event, "timestamp": 7} for event in events]
    steps: list[Step] = [("script", "processor", "js-script", {"script": SCRIPT}, ["source"])]
    delivered = await delivered_ndjson(loopback_client, steps, events)
    expected = [_done(events[0], 7), *events[2:5], _done(events[5], 7)]
    assert delivered == _ndjson(expected)


async def test_the_event_loop_answers_while_a_script_spins(loopback_client: AppClient) -> None:
    account = await new_account(loopback_client, throttle=False)
    script = "function processEvent(e) { for (;;) {} }"
    steps: list[Step] = [
        ("script", "processor", "js-script", {"script": script}, ["source"]),
        ("store", "destination", "mezmo", {}, ["script"]),
    ]
    wired = await wire_source(loopback_client, account, "http", {}, steps)
    # Eight events, each running until its CPU time budget stops it.
    spinning = asyncio.create_task(
        loopback_client.post(wired.url, json=[{"n": n} for n in range(8)], headers=wired.auth)
    )
    sandbox = shared_sandbox()
    answered_while_running = 0
    while not spinning.done():
        health = await loopback_client.get("/healthz")
        assert health.status_code == 200
        # Answered while a sandbox process runs the script: the loop was not blocked.
        answered_while_running += sandbox.busy() > 0
        await asyncio.sleep(0.01)  # an in-process request may never suspend: let others run
    assert (await spinning).status_code == 200  # the events passed, unchanged
    assert answered_while_running > 0

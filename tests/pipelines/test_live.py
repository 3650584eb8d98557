"""The live tap and usage metrics of a running pipeline, over HTTP, on SQLite and
PostgreSQL; the tap across two app instances sharing a real Redis."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from tests.conftest import AppClient
from tests.gateway.factories import Wired, new_account, wire
from tests.pipelines.factories import assert_v3_error

from tidegate.app_state import AppState

ERRORS_ONLY = {"field": ".level", "str_operator": "equal", "value": "error"}
STEPS: list[tuple[str, str, str, dict[str, Any], list[str]]] = [
    ("errors", "processor", "filter", {"condition": ERRORS_ONLY}, ["source"]),
    ("void", "destination", "blackhole", {}, ["errors"]),
]


def state_of(client: httpx.AsyncClient) -> AppState:
    transport = client._transport
    assert isinstance(transport, httpx.ASGITransport)
    state: AppState = transport.app.state.tidegate  # type: ignore[attr-defined]
    return state


async def tap(
    client: httpx.AsyncClient, wired: Wired, component: str, body: dict[str, Any]
) -> httpx.Response:
    return await client.post(
        f"/v3/pipeline/{wired.pipeline_id}/tap/{wired.nodes[component]}",
        json=body,
        headers=wired.account.headers,
    )


async def send_until_done(
    client: httpx.AsyncClient, wired: Wired, batch: list[dict[str, Any]], tapping: Any
) -> httpx.Response:
    """Send ``batch`` repeatedly while the tap request is open (it registers first)."""
    task = asyncio.ensure_future(tapping)
    while not task.done():
        response = await client.post(wired.url, json=batch, headers=wired.auth)
        assert response.status_code == 200, response.text
        await asyncio.sleep(0.05)
    return await task


async def test_tap_shows_what_passes_a_component(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire(client, account, STEPS)
    batch = [
        {"line": "a", "level": "info"},
        {"line": "b", "level": "error", "n": 1},
        {"line": "c", "level": "error", "n": 2},
    ]
    response = await send_until_done(
        client, wired, batch, tap(client, wired, "errors", {"limit": 3, "timeout": 20})
    )
    assert response.status_code == 200, response.text
    data = response.json()["data"]
    assert data["component_id"] == wired.nodes["errors"]
    assert data["count"] == 3
    assert data["timed_out"] is False
    assert all(event["level"] == "error" for event in data["events"])
    assert data["events"][:2] == [batch[1], batch[2]]

    # A string filter keeps the events whose JSON contains it; a condition works too.
    by_text = await send_until_done(
        client, wired, batch, tap(client, wired, "source", {"limit": 2, "filter": '"line":"A"'})
    )
    assert [event["line"] for event in by_text.json()["data"]["events"]] == ["a", "a"]
    by_condition = await send_until_done(
        client,
        wired,
        batch,
        tap(
            client,
            wired,
            "source",
            {"limit": 1, "filter": {"field": ".n", "str_operator": "equal", "value": 2}},
        ),
    )
    assert by_condition.json()["data"]["events"] == [batch[2]]


async def test_tap_ends_at_its_timeout_with_what_it_caught(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire(client, account, STEPS)
    response = await tap(client, wired, "void", {"limit": 5, "timeout": 0.2})
    assert response.status_code == 200, response.text
    assert response.json()["data"] == {
        "pipeline_id": wired.pipeline_id,
        "component_id": wired.nodes["void"],
        "events": [],
        "count": 0,
        "timed_out": True,
    }
    assert len(state_of(client).pipelines.taps) == 0  # nothing left behind


async def test_tap_refuses_bad_requests_and_foreign_ids(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    other = await new_account(client, throttle=False)
    wired = await wire(client, account, STEPS)
    for body, pointer in (
        ({"limit": 101}, "/limit"),
        ({"limit": 0}, "/limit"),
        ({"timeout": 21}, "/timeout"),
        ({"filter": {"field": ".x", "str_operator": "nope"}}, "/filter"),
    ):
        error = assert_v3_error(await tap(client, wired, "errors", body), 400)
        assert error["errors"][0]["instance_path"] == pointer, error
    missing = await client.post(
        f"/v3/pipeline/{wired.pipeline_id}/tap/{'0' * 36}",
        json={"timeout": 0.1},
        headers=account.headers,
    )
    assert_v3_error(missing, 404)
    foreign = await client.post(
        f"/v3/pipeline/{wired.pipeline_id}/tap/{wired.nodes['errors']}",
        json={"timeout": 0.1},
        headers=other.headers,
    )
    assert_v3_error(foreign, 404)
    assert foreign.json()["message"].startswith("No pipeline")


async def test_usage_counts_each_component(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    other = await new_account(client, throttle=False)
    wired = await wire(client, account, STEPS)
    batch = [{"line": "a", "level": "info"}, {"line": "b", "level": "error"}] * 2
    for _ in range(3):
        response = await client.post(wired.url, json=batch, headers=wired.auth)
        assert response.status_code == 200
    state = state_of(client)
    assert await state.pipelines.usage.flush(state.db) >= 3

    answer = await client.get(
        "/v3/pipeline/metric/usage",
        params={"pipeline_id": wired.pipeline_id},
        headers=account.headers,
    )
    assert answer.status_code == 200, answer.text
    points = {point["component_id"]: point for point in answer.json()["data"]}
    assert set(points) == {wired.source_id, wired.nodes["errors"], wired.nodes["void"]}
    source, errors, void = (
        points[wired.source_id],
        points[wired.nodes["errors"]],
        points[wired.nodes["void"]],
    )
    assert (source["ingress_events"], source["egress_events"]) == (12, 12)
    assert (errors["ingress_events"], errors["egress_events"]) == (6 * 2, 6)
    assert (void["ingress_events"], void["egress_events"]) == (6, 6)
    body_bytes = len(httpx.Request("POST", "/", json=batch).content)
    assert source["ingress_bytes"] == 3 * body_bytes
    assert errors["egress_bytes"] == pytest.approx(3 * body_bytes / 2, abs=3)
    assert source["bucket"].endswith("Z") or source["bucket"].endswith("+00:00")

    ingress = await client.get(
        "/v3/pipeline/metric/usage",
        params={"pipeline_id": wired.pipeline_id, "traffic": "ingress", "bucket": "day"},
        headers=account.headers,
    )
    [day] = [p for p in ingress.json()["data"] if p["component_id"] == wired.source_id]
    assert day["ingress_events"] == 12
    assert day["egress_events"] is None
    assert day["bucket_ms"] % 86_400_000 == 0

    foreign = await client.get(
        "/v3/pipeline/metric/usage",
        params={"pipeline_id": wired.pipeline_id},
        headers=other.headers,
    )
    assert foreign.json()["data"] == []
    bad = await client.get(
        "/v3/pipeline/metric/usage", params={"bucket": "90"}, headers=account.headers
    )
    assert_v3_error(bad, 400)


async def test_tap_sees_the_events_of_another_worker(
    two_workers: tuple[AppClient, AppClient],
) -> None:
    tapping, sending = two_workers
    account = await new_account(tapping, throttle=False)
    wired = await wire(tapping, account, STEPS)
    batch = [{"line": "x", "level": "error"}]
    response = await send_until_done(
        sending, wired, batch, tap(tapping, wired, "errors", {"limit": 2, "timeout": 20})
    )
    assert response.status_code == 200, response.text
    assert response.json()["data"]["events"] == batch * 2
    assert response.json()["data"]["timed_out"] is False

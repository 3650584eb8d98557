"""The http destination against a local server: encodings, batches, retries with
backoff, permanent failures, and back-pressure (429/503 with Retry-After)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import orjson
import pytest
from tests.conftest import AppClient
from tests.gateway.factories import LocalDestination, count_lines, events, new_account, wire

from tidegate.pipelines.node_configs import HttpDestinationConfig
from tidegate.runtime.http_destination import HttpDestination, encode_batches
from tidegate.runtime.limits import RuntimeLimits
from tidegate.runtime.runtime import Runtime


@asynccontextmanager
async def limits(client: AppClient, **changes: Any) -> AsyncIterator[Runtime]:
    """Run the in-process app's data plane with other limits for the block."""
    transport = client._transport
    assert isinstance(transport, httpx.ASGITransport)
    state = transport.app.state  # type: ignore[attr-defined]
    saved = getattr(state, "tidegate_runtime", None)
    runtime = Runtime(
        limits=RuntimeLimits(backoff_base_ms=20, backoff_cap_ms=200, **changes), redis=None
    )
    state.tidegate_runtime = runtime
    try:
        yield runtime
    finally:
        state.tidegate_runtime = saved
        await runtime.aclose()


def http_steps(uri: str, **config: Any) -> list[tuple[str, str, str, dict[str, Any], list[str]]]:
    return [("out", "destination", "http", {"uri": uri, **config}, ["source"])]


async def test_json_batches_with_headers(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    async with LocalDestination() as server, limits(client):
        wired = await wire(
            client,
            account,
            http_steps(server.url, headers={"X-Api-Key": "k1"}, batch={"max_events": 2}),
        )
        response = await client.post(wired.url, json=events(5), headers=wired.auth)
        assert response.status_code == 200, response.text
    assert len(server.received) == 3
    bodies = sorted((orjson.loads(r.body) for r in server.received), key=len)
    assert [len(body) for body in bodies] == [1, 2, 2]
    assert sorted(e["line"] for body in bodies for e in body) == [f"event {i}" for i in range(5)]
    assert all(r.headers["content-type"] == "application/json" for r in server.received)
    assert all(r.headers["x-api-key"] == "k1" for r in server.received)


async def test_ndjson_encoding(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    async with LocalDestination() as server, limits(client):
        wired = await wire(client, account, http_steps(server.url, encoding="ndjson"))
        response = await client.post(wired.url, json=events(3), headers=wired.auth)
        assert response.status_code == 200, response.text
    [received] = server.received
    assert received.headers["content-type"] == "application/x-ndjson"
    assert [orjson.loads(line)["line"] for line in received.body.splitlines()] == [
        "event 0",
        "event 1",
        "event 2",
    ]


def test_batches_respect_max_bytes() -> None:
    config = HttpDestinationConfig.model_validate(
        {"uri": "http://x.test", "batch": {"max_bytes": 1024}}
    )
    batch = [{"pad": "x" * 300} for _ in range(10)]
    bodies = list(encode_batches(batch, config))
    assert all(len(body) <= 1024 for body in bodies)
    assert sum(len(orjson.loads(body)) for body in bodies) == 10
    huge = list(encode_batches([{"pad": "x" * 5000}], config))
    assert len(huge) == 1  # an event larger than max_bytes travels alone


async def test_retries_a_flaky_destination_with_backoff(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    async with LocalDestination(script=[503, 500, 429, 200]) as server, limits(client):
        wired = await wire(client, account, http_steps(server.url, max_retries=5))
        started = time.monotonic()
        response = await client.post(wired.url, json=events(2), headers=wired.auth)
        elapsed = time.monotonic() - started
        assert response.status_code == 200, response.text
    assert server.attempts == 4
    assert len(server.received) == 1
    # Backoff 20 ms doubling with half jitter: at least 10 + 20 + 40 ms of waiting.
    assert elapsed >= 0.07


async def test_out_of_retries_is_503_with_retry_after(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    async with LocalDestination(script=[500]) as server, limits(client):
        wired = await wire(
            client,
            account,
            [
                *http_steps(server.url, max_retries=2),
                ("store", "destination", "log_analysis", {}, ["source"]),
            ],
        )
        response = await client.post(wired.url, json=events(1), headers=wired.auth)
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "5"
    assert response.json()["status"] == "error"
    assert server.attempts == 3
    # At-least-once: the log store took the events; the retry will store them again.
    assert await count_lines(client.database_url, account.account_id) == 1


async def test_permanent_refusal_is_not_retried(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    async with LocalDestination(script=[400]) as server, limits(client):
        wired = await wire(client, account, http_steps(server.url, max_retries=5))
        response = await client.post(wired.url, json=events(1), headers=wired.auth)
    assert response.status_code == 503
    assert server.attempts == 1


async def test_unreachable_destination_is_503(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    async with LocalDestination() as server:
        url = server.url
    async with limits(client):
        wired = await wire(client, account, http_steps(url, max_retries=1))
        response = await client.post(wired.url, json=events(1), headers=wired.auth)
    assert response.status_code == 503
    assert "Retry-After" in response.headers


async def test_slow_destination_beyond_the_deadline_is_503(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    async with LocalDestination(delay=2.0) as server, limits(client, delivery_deadline_ms=300):
        wired = await wire(client, account, http_steps(server.url))
        started = time.monotonic()
        response = await client.post(wired.url, json=events(1), headers=wired.auth)
        elapsed = time.monotonic() - started
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "5"
    assert elapsed < 1.5


async def test_saturated_destination_answers_at_once(client: AppClient) -> None:
    """One request may deliver to the slow destination at a time; the others are refused
    immediately (before any processing) instead of queueing."""
    account = await new_account(client, throttle=False)
    async with (
        LocalDestination(delay=0.5) as server,
        limits(client, destination_inflight=1) as runtime,
    ):
        wired = await wire(client, account, http_steps(server.url))
        slow = asyncio.create_task(client.post(wired.url, json=events(1), headers=wired.auth))
        while server.in_flight == 0:
            await asyncio.sleep(0.01)
        started = time.monotonic()
        refused = [
            await client.post(wired.url, json=events(1), headers=wired.auth) for _ in range(3)
        ]
        assert time.monotonic() - started < 0.4
        assert (await slow).status_code == 200
        assert runtime.destination_gates.inflight((wired.pipeline_id, wired.nodes["out"])) == 0
    assert [r.status_code for r in refused] == [503] * 3
    assert all(r.headers["Retry-After"] == "1" for r in refused)
    assert server.attempts == 1


async def test_saturated_route_is_429(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    async with LocalDestination(delay=0.5) as server, limits(client, route_inflight=2):
        wired = await wire(client, account, http_steps(server.url))
        slow = [
            asyncio.create_task(client.post(wired.url, json=events(1), headers=wired.auth))
            for _ in range(2)
        ]
        while server.in_flight < 2:
            await asyncio.sleep(0.01)
        refused = await client.post(wired.url, json=events(1), headers=wired.auth)
        assert [r.status_code for r in await asyncio.gather(*slow)] == [200, 200]
        after = await client.post(wired.url, json=events(1), headers=wired.auth)
    assert refused.status_code == 429
    assert refused.headers["Retry-After"] == "1"
    assert after.status_code == 200


async def test_concurrent_posts_to_one_destination_are_bounded() -> None:
    config = HttpDestinationConfig.model_validate(
        {"uri": "http://127.0.0.1:1/", "batch": {"max_events": 1}}
    )
    async with LocalDestination(delay=0.05) as server, httpx.AsyncClient() as http:
        config = config.model_copy(update={"uri": server.url})
        sender = HttpDestination(
            config, client=http, concurrency=3, backoff_base_ms=10, backoff_cap_ms=100, name="t"
        )
        loop = asyncio.get_running_loop()
        await sender.send([{"n": i} for i in range(12)], deadline=loop.time() + 10)
    assert len(server.received) == 12
    assert server.max_in_flight == 3


@pytest.mark.parametrize("attempt", [0, 3, 10])
def test_backoff_is_capped_with_jitter(attempt: int) -> None:
    config = HttpDestinationConfig.model_validate({"uri": "http://x.test"})
    sender = HttpDestination(
        config,
        client=httpx.AsyncClient(),
        concurrency=1,
        backoff_base_ms=100,
        backoff_cap_ms=1000,
        name="t",
    )
    ceiling = min(1.0, 0.1 * 2**attempt)
    delays = {sender.backoff(attempt) for _ in range(50)}
    assert all(ceiling / 2 <= delay <= ceiling for delay in delays)
    assert len(delays) > 1

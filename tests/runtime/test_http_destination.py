"""The http destination against a local server: encodings, batches, retries with
backoff, permanent failures, back-pressure (429/503 with Retry-After), the refusal of
non-public addresses (at save time and at connect time) and the response body cap.

The local receivers listen on 127.0.0.1, which tidegate refuses by default: this
module's ``client`` is an app whose operator allow-listed loopback."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import orjson
import pytest
from tests.conftest import AppClient, make_settings, open_client
from tests.gateway.factories import LocalDestination, count_lines, events, new_account, wire
from tests.waiting import eventually

from tidegate.components.destinations.http import (
    HttpDestination,
    HttpDestinationConfig,
    encode_batches,
)
from tidegate.components.destinations.http_sender import MAX_RESPONSE_BYTES
from tidegate.delivery import DeliveryFailed
from tidegate.kit.destination_guard import (
    DestinationPolicy,
    DestinationRefused,
    GuardedTransport,
    policy_from_setting,
)
from tidegate.runtime.limits import RuntimeLimits
from tidegate.runtime.runtime import Runtime

LOOPBACK_ALLOWED = "127.0.0.1/32"


@pytest.fixture(scope="module")
async def client(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[AppClient]:
    """The app over in-process ASGI with loopback allow-listed for http destinations."""
    settings = make_settings(
        database_url, tmp_path_factory.mktemp("data"), destination_allow=LOOPBACK_ALLOWED
    )
    http, lifespan = await open_client(settings)
    try:
        yield http
    finally:
        await http.aclose()
        await lifespan.__aexit__(None, None, None)


@asynccontextmanager
async def limits(client: AppClient, **changes: Any) -> AsyncIterator[Runtime]:
    """Run the in-process app's data plane with other limits for the block."""
    transport = client._transport
    assert isinstance(transport, httpx.ASGITransport)
    state = transport.app.state.tidegate  # type: ignore[attr-defined]
    saved = state.pipelines
    runtime = Runtime(
        limits=RuntimeLimits(backoff_base_ms=20, backoff_cap_ms=200, **changes),
        redis=None,
        destinations=policy_from_setting(client.settings.destination_allow),
    )
    state.pipelines = runtime
    try:
        yield runtime
    finally:
        state.pipelines = saved
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


async def test_slow_destination_beyond_the_deadline_is_503(
    client: AppClient, caplog: pytest.LogCaptureFixture
) -> None:
    account = await new_account(client, throttle=False)
    answer = asyncio.Event()  # the destination answers only after the request's answer
    async with (
        LocalDestination(hold=answer) as server,
        limits(client, delivery_deadline_ms=300),
    ):
        wired = await wire(client, account, http_steps(server.url))
        with caplog.at_level(logging.WARNING, logger="tidegate.runtime"):
            response = await client.post(wired.url, json=events(1), headers=wired.auth)
        answer.set()
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "5"
    # The deadline ended the delivery (not a refused connection). Whether the request had
    # reached the held destination by then is the machine's speed: on a loaded one the
    # 300 ms could pass before its handler ran (it asserted that it had, and failed).
    assert any("slower than the delivery deadline" in r.getMessage() for r in caplog.records)


async def test_saturated_destination_answers_at_once(client: AppClient) -> None:
    """One request may deliver to the slow destination at a time; the others are refused
    immediately (before any processing) instead of queueing."""
    account = await new_account(client, throttle=False)
    answer = asyncio.Event()  # the slow delivery ends only when the test says so
    async with (
        LocalDestination(hold=answer) as server,
        limits(client, destination_inflight=1) as runtime,
    ):
        wired = await wire(client, account, http_steps(server.url))
        slow = asyncio.create_task(client.post(wired.url, json=events(1), headers=wired.auth))
        await eventually(lambda: server.in_flight, every=0.01, what="the delivery held")
        refused = [
            await client.post(wired.url, json=events(1), headers=wired.auth) for _ in range(3)
        ]
        # Refused while the one delivery was still held: nothing queued behind it.
        assert not slow.done()
        assert server.in_flight == 1
        answer.set()
        assert (await slow).status_code == 200
        assert runtime.destination_gates.inflight((wired.pipeline_id, wired.nodes["out"])) == 0
    assert [r.status_code for r in refused] == [503] * 3
    assert all(r.headers["Retry-After"] == "1" for r in refused)
    assert server.attempts == 1


async def test_saturated_route_is_429(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    answer = asyncio.Event()  # the two deliveries end only when the test says so
    async with LocalDestination(hold=answer) as server, limits(client, route_inflight=2):
        wired = await wire(client, account, http_steps(server.url))
        slow = [
            asyncio.create_task(client.post(wired.url, json=events(1), headers=wired.auth))
            for _ in range(2)
        ]
        await eventually(lambda: server.in_flight == 2, every=0.01, what="both deliveries held")
        refused = await client.post(wired.url, json=events(1), headers=wired.auth)
        answer.set()
        assert [r.status_code for r in await asyncio.gather(*slow)] == [200, 200]
        after = await client.post(wired.url, json=events(1), headers=wired.auth)
    assert refused.status_code == 429
    assert refused.headers["Retry-After"] == "1"
    assert after.status_code == 200


async def test_concurrent_posts_to_one_destination_are_bounded() -> None:
    config = HttpDestinationConfig.model_validate(
        {"uri": "http://127.0.0.1:1/", "batch": {"max_events": 1}}
    )  # the sender alone: no policy on this plain client
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


# -- Non-public destinations (server-side request forgery) --------------------------


@pytest.fixture(scope="module")
async def default_client(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[AppClient]:
    """The app with the default policy: public destinations only."""
    http, lifespan = await open_client(make_settings(database_url, tmp_path_factory.mktemp("d")))
    try:
        yield http
    finally:
        await http.aclose()
        await lifespan.__aexit__(None, None, None)


REFUSED = [
    "http://127.0.0.1:5432/",
    "http://169.254.169.254/latest/meta-data/",
    "http://10.1.2.3/in",
    "http://192.168.0.10:6379/",
    "http://[::1]:8080/in",
    "http://[fd00::1]/in",
    "http://[::ffff:127.0.0.1]/in",
    "http://0.0.0.0:9/",
    "http://localhost:8080/in",
]


@pytest.mark.parametrize("uri", REFUSED)
async def test_non_public_destination_is_refused_when_saved(
    default_client: AppClient, uri: str
) -> None:
    account = await new_account(default_client, throttle=False)
    wired = await wire(default_client, account, [])
    response = await default_client.post(
        f"/v3/pipeline/{wired.pipeline_id}/destination",
        json={"type": "http", "inputs": [wired.source_id], "user_config": {"uri": uri}},
        headers=account.headers,
    )
    assert response.status_code == 400, response.text
    [error] = response.json()["errors"]
    assert error["instance_path"] == "/user_config/uri"
    assert "non-public" in error["message"]


async def test_non_public_destination_is_refused_when_updated(default_client: AppClient) -> None:
    account = await new_account(default_client, throttle=False)
    wired = await wire(
        default_client,
        account,
        [("out", "destination", "http", {"uri": "https://collector.example/in"}, ["source"])],
    )
    response = await default_client.patch(
        f"/v3/pipeline/{wired.pipeline_id}/destination/{wired.nodes['out']}",
        json={"user_config": {"uri": "http://169.254.169.254/latest/meta-data/"}},
        headers=account.headers,
    )
    assert response.status_code == 400, response.text
    assert response.json()["errors"][0]["instance_path"] == "/user_config/uri"


async def test_allow_list_permits_a_network(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire(client, account, http_steps("http://127.0.0.1:9/in"))
    assert wired.nodes["out"]


def _sender(uri: str, http: httpx.AsyncClient) -> HttpDestination:
    config = HttpDestinationConfig.model_validate({"uri": uri, "max_retries": 3})
    return HttpDestination(
        config, client=http, concurrency=1, backoff_base_ms=10, backoff_cap_ms=20, name="t"
    )


def _guarded(policy: DestinationPolicy) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=GuardedTransport(policy, limits=httpx.Limits()), trust_env=False
    )


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
async def test_connect_time_check_refuses_without_retrying(host: str) -> None:
    """A destination saved before (or resolving differently than) at save time is
    refused when the connection would open: nothing reaches the address."""
    async with LocalDestination() as server, _guarded(DestinationPolicy()) as http:
        sender = _sender(f"http://{host}:{server.port}/in", http)
        loop = asyncio.get_running_loop()
        with pytest.raises(DeliveryFailed, match="non-public"):
            await sender.send([{"line": "x"}], deadline=loop.time() + 10)
    assert server.attempts == 0


async def test_connect_time_check_connects_to_the_vetted_address(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Against DNS rebinding: the name is resolved once, and the socket opens to the
    address that was vetted, with the Host header still naming the host."""
    loop = asyncio.get_running_loop()
    answers: list[str] = []

    async def resolve(host: str, port: int, **_: Any) -> list[Any]:
        answers.append(host)
        return [(2, 1, 6, "", ("127.0.0.1", port))]

    monkeypatch.setattr(loop, "getaddrinfo", resolve)
    async with LocalDestination() as server:
        url = f"http://rebind.test:{server.port}/in"
        async with _guarded(DestinationPolicy()) as http:
            with pytest.raises(DeliveryFailed, match="non-public"):
                await _sender(url, http).send([{"n": 1}], deadline=loop.time() + 10)
        allowed = policy_from_setting(LOOPBACK_ALLOWED)
        async with _guarded(allowed) as http:
            await _sender(url, http).send([{"n": 1}], deadline=loop.time() + 10)
    assert answers == ["rebind.test", "rebind.test"]
    [received] = server.received
    assert received.headers["host"] == f"rebind.test:{server.port}"


def test_every_resolved_address_is_vetted() -> None:
    policy = DestinationPolicy()
    assert policy.vet("ok.test", ["8.8.8.8"]) == ["8.8.8.8"]
    with pytest.raises(DestinationRefused):
        policy.vet("mixed.test", ["8.8.8.8", "10.0.0.1"])
    for address in ["2002:7f00:1::1", "64:ff9b::a9fe:a9fe", "100.64.0.1", "224.0.0.1", "fe80::1"]:
        with pytest.raises(DestinationRefused):
            policy.vet("embedded.test", [address])
    named = policy_from_setting("receiver.internal, 10.0.0.0/8")
    assert named.vet("Receiver.Internal.", ["192.168.1.1"]) == ["192.168.1.1"]
    assert named.vet("other.test", ["10.9.9.9"]) == ["10.9.9.9"]
    with pytest.raises(ValueError, match="TIDEGATE_DESTINATION_ALLOW"):
        policy_from_setting("10.0.0.0/33")


async def test_a_huge_response_body_is_not_read() -> None:
    """A destination answering 200 with an endless body: tidegate reads at most a small
    cap of it, then drops the connection, and the delivery counts as acknowledged."""
    written = 0
    closed = asyncio.Event()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal written
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        await reader.readexactly(length)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000000\r\n\r\n")
        chunk = b"x" * 65536
        try:
            while written < 200 * 1024 * 1024:
                writer.write(chunk)
                await writer.drain()
                written += len(chunk)
        except ConnectionError:
            pass
        finally:
            closed.set()
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    allowed = policy_from_setting(LOOPBACK_ALLOWED)
    try:
        async with _guarded(allowed) as http:
            loop = asyncio.get_running_loop()
            sender = _sender(f"http://127.0.0.1:{port}/in", http)
            await sender.send([{"line": "x"}], deadline=loop.time() + 20)
        await asyncio.wait_for(closed.wait(), 60)
    finally:
        server.close()
    # What the kernel buffers plus the cap, far below what the server would send.
    assert written < 32 * 1024 * 1024
    assert MAX_RESPONSE_BYTES <= 64 * 1024

"""The live tap as a stream (``POST /v3/pipeline/{id}/tap/{component}/stream``): through a
real server, every event that passes is carried whenever it is sent (the round tap
loses those passing between two of its requests), the rate and the count of what it
skipped, the refusals; in-process, a person's stream ends when they are no longer an
admin, and the server's stop ends it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.conftest import AppClient, make_settings, open_client
from tests.gateway.factories import Wired, new_account_on, wire
from tests.live import live_async_client
from tests.pipelines.factories import assert_v3_error
from tests.pipelines.test_live import STEPS, send_until_done, state_of, tap
from tests.tail.test_live import Stream, _env, reading
from tests.tail.test_revocation import GENEROUS_S, _events
from tests.users.factories import add_person, sign_in_person
from tests.waiting import eventually

from tidegate.kit.tap import StreamTap


def stream_path(wired: Wired, component: str) -> str:
    return f"/v3/pipeline/{wired.pipeline_id}/tap/{wired.nodes[component]}/stream"


@asynccontextmanager
async def tap_stream(
    http: httpx.AsyncClient, wired: Wired, component: str, body: dict[str, Any]
) -> AsyncIterator[Stream]:
    """The stream's events, read in the background, from its ``ready`` on."""
    path = stream_path(wired, component)
    async with (
        http.stream("POST", path, json=body, headers=wired.account.headers) as response,
        reading(response) as stream,
    ):
        yield stream


@asynccontextmanager
async def wired_on_a_server(
    client: AppClient, shared_live_server: Any
) -> AsyncIterator[tuple[httpx.AsyncClient, Wired]]:
    """A client of a real server, and a published pipeline of a new account on it."""
    server = shared_live_server(env=_env(client))
    async with live_async_client(server.base_url) as http:
        account = await new_account_on(http, client.database_url, throttle=False)
        yield http, await wire(http, account, STEPS)


def skipped(stream: Stream) -> int:
    return sum(data["skipped"] for name, data in stream.events if name == "skipped")


async def test_a_stream_carries_every_event_sent_while_it_is_open(
    client: AppClient, shared_live_server: Any
) -> None:
    async with (
        wired_on_a_server(client, shared_live_server) as (http, wired),
        tap_stream(http, wired, "errors", {"rate": 1000}) as stream,
    ):
        # Forty requests, one after another, with pauses of every length between them:
        # the stream's reader drains in rounds, and an event landing between two rounds
        # must be carried like any other.
        for number in range(40):
            batch = [
                {"line": f"{number} a", "level": "info", "n": number},
                {"line": f"{number} b", "level": "error", "n": number, "part": 0},
                {"line": f"{number} c", "level": "error", "n": number, "part": 1},
            ]
            response = await http.post(wired.url, json=batch, headers=wired.auth)
            assert response.status_code == 200, response.text
            await asyncio.sleep((number % 5) * 0.05)
        caught = await stream.wait_for(80, timeout=GENEROUS_S)
    assert [(event["n"], event["part"]) for event in caught] == [
        (number, part) for number in range(40) for part in (0, 1)
    ]
    assert all(event["level"] == "error" for event in caught)
    assert skipped(stream) == 0


async def test_a_stream_counts_what_its_rate_did_not_carry(
    client: AppClient, shared_live_server: Any
) -> None:
    errors_only = {"field": ".level", "str_operator": "equal", "value": "error"}
    async with (
        wired_on_a_server(client, shared_live_server) as (http, wired),
        tap_stream(http, wired, "source", {"rate": 2, "filter": errors_only}) as stream,
    ):
        batch = [{"line": f"e{n}", "level": "error", "n": n} for n in range(30)]
        batch.append({"line": "not kept by the filter", "level": "info"})
        response = await http.post(wired.url, json=batch, headers=wired.auth)
        assert response.status_code == 200, response.text
        await eventually(
            lambda: len(stream.lines()) + skipped(stream) >= 30,
            what="every error event carried or counted",
            timeout=GENEROUS_S,
        )
    carried = [event["n"] for event in stream.lines()]
    # One request's batch passes the source within a second or two: at most the rate in each.
    assert 1 <= len(carried) <= 4, stream.events
    assert carried == sorted(carried)
    assert len(carried) + skipped(stream) == 30


async def test_a_stream_is_refused_as_the_round_tap_is(client: AppClient) -> None:
    account = await new_account_on(client, client.database_url, throttle=False)
    other = await new_account_on(client, client.database_url, throttle=False)
    wired = await wire(client, account, STEPS)
    path = stream_path(wired, "errors")
    for body, pointer in (
        ({"rate": 0}, "/rate"),
        ({"rate": 1001}, "/rate"),
        ({"filter": {"field": ".x", "str_operator": "nope"}}, "/filter"),
    ):
        error = assert_v3_error(await client.post(path, json=body, headers=account.headers), 400)
        assert error["errors"][0]["instance_path"] == pointer, error
    foreign = await client.post(path, json={}, headers=other.headers)
    assert assert_v3_error(foreign, 404)["message"].startswith("No pipeline")
    missing = await client.post(
        f"/v3/pipeline/{wired.pipeline_id}/tap/{'0' * 36}/stream", json={}, headers=account.headers
    )
    assert_v3_error(missing, 404)
    assert len(state_of(client).pipelines.taps) == 0


async def test_a_tap_of_one_output_sees_what_goes_nowhere(client: AppClient) -> None:
    """A throttle's ``dropped`` output wired to nothing: the default tap does not show
    it, a tap of that output does; an output the component lacks is refused."""
    account = await new_account_on(client, client.database_url)  # the Throttle enabled
    one_an_hour = {"threshold": 1, "window_ms": 3_600_000, "key_field": ".app"}
    wired = await wire(
        client,
        account,
        [
            ("t", "processor", "throttle", one_an_hour, ["source"]),
            ("void", "destination", "blackhole", {}, ["t"]),
        ],
    )
    batch = [{"line": f"l{n}", "app": "a", "n": n} for n in range(3)]
    dropped = await send_until_done(
        client, wired, batch, tap(client, wired, "t", {"limit": 4, "output": "dropped"})
    )
    assert dropped.status_code == 200, dropped.text
    events = dropped.json()["data"]["events"]
    assert len(events) == 4
    assert all(event["app"] == "a" for event in events)
    # The default tap (main output and wired named ones) sees none of them: the throttle
    # passes nothing more within the hour.
    everything = await send_until_done(
        client, wired, batch, tap(client, wired, "t", {"limit": 1, "timeout": 0.5})
    )
    assert everything.json()["data"]["events"] == []
    main = await tap(client, wired, "t", {"timeout": 0.1, "output": "main"})
    assert main.status_code == 200, main.text
    for body in ({"output": "nope"}, {"output": ""}):
        error = assert_v3_error(await tap(client, wired, "t", body), 400)
        assert error["errors"][0]["instance_path"] == "/output", error
    refused = await client.post(
        stream_path(wired, "t"), json={"output": "nope"}, headers=account.headers
    )
    assert assert_v3_error(refused, 400)["errors"][0]["instance_path"] == "/output"


def open_streams(client: AppClient) -> list[StreamTap]:
    taps = state_of(client).pipelines.taps
    return [tap for group in taps._taps.values() for tap in group if isinstance(tap, StreamTap)]


async def test_a_persons_stream_ends_when_they_are_no_longer_an_admin(client: AppClient) -> None:
    account = await new_account_on(client, client.database_url, throttle=False)
    wired = await wire(client, account, STEPS)
    person = await add_person(client.database_url, account_id=account.account_id, role="admin")
    browser = await sign_in_person(client, person)
    # In-process ASGI hands the body back only once the stream ends.
    task = asyncio.create_task(
        client.post(
            stream_path(wired, "errors"), json={}, headers=browser.headers, timeout=GENEROUS_S
        )
    )
    await eventually(lambda: open_streams(client) or task.done(), what="the stream opened")
    assert not task.done(), task.result().text

    await add_person(
        client.database_url, account_id=account.account_id, role="member", email=person.email
    )
    try:
        response = await asyncio.wait_for(task, GENEROUS_S)
    except TimeoutError:
        raise AssertionError("the stream was still open after the demotion") from None
    assert response.status_code == 200
    events = _events(response.text)
    assert events[0] == ("ready", {})
    assert events[-1][0] == "error"
    assert "role" in events[-1][1]["error"]
    assert open_streams(client) == []


@pytest.fixture
async def own_app(database_url: str, tmp_path: Path) -> AsyncIterator[AppClient]:
    """An app of its own: the test stops its streams as a stopping server does."""
    client, life = await open_client(make_settings(database_url, tmp_path))
    try:
        yield client
    finally:
        await client.aclose()
        await life.__aexit__(None, None, None)


async def test_the_servers_stop_ends_every_stream(own_app: AppClient) -> None:
    client = own_app
    account = await new_account_on(client, client.database_url, throttle=False)
    wired = await wire(client, account, STEPS)
    task = asyncio.create_task(
        client.post(
            stream_path(wired, "void"), json={}, headers=account.headers, timeout=GENEROUS_S
        )
    )
    await eventually(lambda: open_streams(client) or task.done(), what="the stream opened")
    state_of(client).pipelines.taps.end_streams()
    response = await asyncio.wait_for(task, GENEROUS_S)
    assert response.status_code == 200
    assert [name for name, _data in _events(response.text)] == ["ready"]
    assert open_streams(client) == []
    # A stream asked for while the server stops opens and ends at once.
    after = await client.post(stream_path(wired, "void"), json={}, headers=account.headers)
    assert [name for name, _data in _events(after.text)] == ["ready"]


async def test_a_stream_sees_the_events_of_another_worker(
    two_workers: tuple[AppClient, AppClient],
) -> None:
    tapping, sending = two_workers
    account = await new_account_on(tapping, tapping.database_url, throttle=False)
    wired = await wire(tapping, account, STEPS)
    task = asyncio.create_task(
        tapping.post(
            stream_path(wired, "errors"),
            json={"rate": 1000},
            headers=account.headers,
            timeout=GENEROUS_S,
        )
    )
    [stream] = await eventually(lambda: open_streams(tapping) or task.done(), what="opened")
    assert not task.done(), task.result().text
    await eventually(
        lambda: len(state_of(sending).pipelines.taps) == 1, what="the other worker forwards"
    )
    for number in range(10):
        batch = [{"line": "x", "level": "error", "n": number}, {"line": "y", "level": "info"}]
        response = await sending.post(wired.url, json=batch, headers=wired.auth)
        assert response.status_code == 200, response.text
    await eventually(lambda: stream.carried >= 10, what="ten events from the other worker")
    state_of(tapping).pipelines.taps.end_streams()
    response = await asyncio.wait_for(task, GENEROUS_S)
    events = _events(response.text)
    assert [data["n"] for name, data in events if name == "message"] == list(range(10))
    # The origin said the stream ended: the other worker drops its forwarding tap at
    # once, not at the end of its lease.
    await eventually(
        lambda: len(state_of(sending).pipelines.taps) == 0, what="the forwarding tap dropped"
    )


async def test_an_open_stream_does_not_hold_up_a_servers_stop(
    client: AppClient, live_server_factory: Any
) -> None:
    if client.database_url.startswith("postgresql"):
        pytest.skip("about the HTTP server, not the database")
    server = live_server_factory(env=_env(client))
    async with server.async_client() as http:
        account = await new_account_on(http, client.database_url, throttle=False)
        wired = await wire(http, account, STEPS)
        async with tap_stream(http, wired, "void", {}):
            await asyncio.to_thread(server.stop)
    log = server.log.read_text()
    assert "Application shutdown complete" in log
    # The stop signal ended the stream (beside live tail's, one callback chained in
    # front of uvicorn's handler); it was not left for uvicorn's graceful timeout.
    assert "timeout graceful shutdown exceeded" not in log, log

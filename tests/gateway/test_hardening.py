"""Issue 7 on the gateway: credentials before the body, the events cap, CPU work off
the loop, every gzip member, raw deflate, and no poison batch (one event that made
every retry of its batch fail with 503 forever)."""

from __future__ import annotations

import asyncio
import gzip
import threading
import time
import zlib
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from tests.conftest import AppClient
from tests.gateway.factories import count_lines, new_account, new_account_on, stored_lines, wire
from tests.gateway.test_body_forms import LOG, legacy_error
from tests.gateway.test_live_server import server_env

import tidegate.api.body_guard
from tidegate.app_state import AppState
from tidegate.components.sources import http as http_source
from tidegate.errors import BadRequest, PayloadTooLarge, Unauthorized
from tidegate.gateway import service
from tidegate.kit.body import MAX_DEPTH, MAX_EVENTS, parse_events
from tidegate.runtime.runtime import Runtime, runtime_of

BLACKHOLE = [("void", "destination", "blackhole", {}, ["source"])]


def _app_state(client: AppClient) -> tuple[AppState, Runtime]:
    transport = client._transport
    assert isinstance(transport, httpx.ASGITransport)
    app: Any = transport.app
    state: AppState = app.state.tidegate
    return state, runtime_of(app)


def _nested(levels: int) -> bytes:
    return b'{"a":' * (levels - 1) + b"1" + b"}" * (levels - 1)


# -- Credentials before the body ----------------------------------------------------


@pytest.mark.parametrize("authorization", [None, "Token tga_wrong"])
async def test_credentials_are_checked_before_the_body_is_read(
    client: AppClient, authorization: str | None
) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire(client, account, LOG)
    state, runtime = _app_state(client)
    reads = 0

    async def read_body() -> bytes:
        nonlocal reads
        reads += 1
        return b'{"line": "never"}'

    with pytest.raises(Unauthorized):
        await service.accept(
            state=state,
            runtime=runtime,
            request=service.GatewayRequest(
                gateway_route_id=wired.route_id,
                authorization=authorization,
                signature=None,
                content_type=None,
                content_encoding=None,
            ),
            read_body=read_body,
        )
    assert reads == 0
    await service.accept(
        state=state,
        runtime=runtime,
        request=service.GatewayRequest(
            gateway_route_id=wired.route_id,
            authorization=wired.key,
            signature=None,
            content_type=None,
            content_encoding=None,
        ),
        read_body=read_body,
    )
    assert reads == 1
    assert await count_lines(client.database_url, account.account_id) == 1


_STREAMING_GUARD = hasattr(tidegate.api.body_guard, "BodyBudget")


@pytest.mark.skipif(
    not _STREAMING_GUARD, reason="the body guard buffers bodies itself (streaming guard: p4)"
)
async def test_a_wrong_key_is_answered_without_waiting_for_the_body(
    live_server_factory: Any, tmp_path: Path
) -> None:
    """A real server: a sender with a wrong key announces 9 MB and sends 1 KiB, then
    stalls. The 401 comes at once; before, the server waited for the whole body."""
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'gw.sqlite3'}"
    server = live_server_factory(env=server_env(database_url))
    async with server.async_client() as http:
        account = await new_account_on(http, database_url, throttle=False)
        wired = await wire(http, account, LOG)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        writer.write(
            f"POST {wired.url} HTTP/1.1\r\nHost: x\r\nAuthorization: Token tga_wrong\r\n"
            f"Content-Type: application/json\r\nContent-Length: {9 * 1024 * 1024}\r\n\r\n".encode()
            + b"[" + b" " * 1024
        )  # fmt: skip
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 60)
    finally:
        writer.close()
    assert head.startswith(b"HTTP/1.1 401"), head


# -- Events cap, CPU off the loop ---------------------------------------------------


async def test_more_than_the_events_cap_is_413_in_the_legacy_shape(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire(client, account, BLACKHOLE)
    ok = await client.post(
        wired.url, content=b"[" + b",".join([b"{}"] * MAX_EVENTS) + b"]", headers=wired.auth
    )
    assert ok.status_code == 200, ok.text
    assert ok.json()["events"] == MAX_EVENTS
    for body in (
        b"[" + b",".join([b"{}"] * (MAX_EVENTS + 1)) + b"]",
        b"\n".join([b"{}"] * (MAX_EVENTS + 1)),
    ):
        response = await client.post(wired.url, content=body, headers=wired.auth)
        assert str(MAX_EVENTS) in legacy_error(response, 413)["error"]


def test_a_huge_array_is_refused_without_building_it() -> None:
    """Element by element: the million-element attack stops at the cap, the array of
    scalars at its first element."""
    with pytest.raises(PayloadTooLarge):
        parse_events(b"[" + b",".join([b"{}"] * 1_000_000) + b"]")
    with pytest.raises(BadRequest, match="Element 0"):
        parse_events(b"[" + b",".join([b"1.5"] * 1_000_000) + b"]")


async def test_parsing_a_large_body_runs_in_a_worker_thread(
    client: AppClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire(client, account, BLACKHOLE)
    threads: list[threading.Thread] = []

    # The http source decodes the body (issue 9: each push source decodes its own).
    decode = http_source.decode_events

    def recording(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.current_thread())
        return decode(*args, **kwargs)

    monkeypatch.setattr(http_source, "decode_events", recording)
    big = orjson.dumps([{"line": f"event {i}", "pad": "x" * 100} for i in range(5_000)])
    response = await client.post(wired.url, content=big, headers=wired.auth)
    assert response.status_code == 200, response.text
    assert threads
    assert threads[0] is not threading.main_thread()


# -- Encodings ----------------------------------------------------------------------


async def test_every_gzip_member_is_inflated(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire(client, account, LOG)
    body = gzip.compress(b'{"line": "first"}\n') + gzip.compress(b'{"line": "second"}\n')
    response = await client.post(
        wired.url, content=body, headers={**wired.auth, "Content-Encoding": "gzip"}
    )
    assert response.status_code == 200, response.text
    assert response.json()["events"] == 2
    lines = await stored_lines(client.database_url, account.account_id)
    assert [line.line for line in lines] == ["first", "second"]


async def test_raw_deflate_and_zlib_deflate_are_accepted(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire(client, account, LOG)
    raw = zlib.compressobj(wbits=-15)
    for body in (
        raw.compress(b'[{"line": "raw"}]') + raw.flush(),
        zlib.compress(b'[{"line": "zlib"}]'),
    ):
        response = await client.post(
            wired.url, content=body, headers={**wired.auth, "Content-Encoding": "deflate"}
        )
        assert response.status_code == 200, response.text
    lines = await stored_lines(client.database_url, account.account_id)
    assert [line.line for line in lines] == ["raw", "zlib"]


def test_a_truncated_gzip_body_is_400_not_a_shorter_batch() -> None:
    body = gzip.compress(orjson.dumps([{"line": f"event {i}"} for i in range(1000)]))
    with pytest.raises(BadRequest, match="truncated"):
        parse_events(body[: len(body) // 2], content_encoding="gzip")


# -- No poison batch ----------------------------------------------------------------


@pytest.mark.parametrize("form", ["array", "ndjson", "object"])
async def test_an_event_too_deep_to_deliver_is_400_naming_it(client: AppClient, form: str) -> None:
    """300 levels parse but cannot be encoded again: before, every retry of the batch
    answered 503 (Retry-After) forever."""
    account = await new_account(client, throttle=False)
    wired = await wire(client, account, LOG)
    deep = _nested(300)
    body = {
        "array": b'[{"line": "good"}, ' + deep + b"]",
        "ndjson": b'{"line": "good"}\n' + deep,
        "object": deep,
    }[form]
    response = await client.post(wired.url, content=body, headers=wired.auth)
    error = legacy_error(response, 400)["error"]
    assert f"deeper than {MAX_DEPTH}" in error
    assert {"array": "Element 1", "ndjson": "Line 2", "object": "The event"}[form] in error
    assert await count_lines(client.database_url, account.account_id) == 0


async def test_an_event_nested_to_the_limit_is_delivered(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire(client, account, LOG)
    response = await client.post(
        wired.url, content=b"[" + _nested(MAX_DEPTH) + b"]", headers=wired.auth
    )
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    "timestamp", ["1" * 5000, "²", 1e30], ids=["5000-digits", "superscript-two", "1e30"]
)
async def test_an_unusable_timestamp_never_fails_its_batch(
    client: AppClient, timestamp: Any
) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire(client, account, LOG)
    body = orjson.dumps([{"line": "good"}, {"line": "odd", "timestamp": timestamp}])
    response = await client.post(wired.url, content=body, headers=wired.auth)
    assert response.status_code == 200, response.text
    lines = await stored_lines(client.database_url, account.account_id)
    assert sorted(line.line for line in lines) == ["good", "odd"]


async def test_integers_beyond_64_bits_are_the_same_in_every_form(client: AppClient) -> None:
    huge = b"123456789012345678901234567890"
    assert parse_events(b'[{"n": ' + huge + b"}]") == parse_events(b'{"n": ' + huge + b"}")
    account = await new_account(client, throttle=False)
    wired = await wire(client, account, LOG)
    response = await client.post(
        wired.url, content=b'[{"line": "x", "n": ' + huge + b"}]", headers=wired.auth
    )
    assert response.status_code == 200, response.text


def test_unpaired_surrogates_and_non_finite_numbers_are_400() -> None:
    assert parse_events(b'[{"a": "\\ud83d\\ude00"}]') == [{"a": "\U0001f600"}]
    for body in (b'[{"a": "\\ud800"}]', b'[{"a": NaN}]', b'[{"a": 1e400}]', b'[{"\\udc00": 1}]'):
        with pytest.raises(BadRequest):
            parse_events(body)


async def test_an_unreadable_throttle_time_field_never_fails_its_batch(client: AppClient) -> None:
    """Before: the throttle raised on the batch, the gateway answered 500, every retry.
    Now the throttle fails open for that batch (as when Redis is unreachable)."""
    account = await new_account(client, throttle=True)
    throttle = {"threshold": 1, "window_ms": 60_000, "key_field": ".app", "time_field": ".t"}
    wired = await wire(
        client,
        account,
        [
            ("t", "processor", "throttle", throttle, ["source"]),
            ("store", "destination", "log_analysis", {}, ["t"]),
        ],
    )
    now = int(time.time() * 1000)
    body = [
        {"line": "first", "app": "a", "t": now},
        {"line": "odd", "app": "a", "t": "1" * 5000},
        {"line": "second", "app": "a", "t": now + 1},
    ]
    response = await client.post(wired.url, json=body, headers=wired.auth)
    assert response.status_code == 200, response.text
    lines = await stored_lines(client.database_url, account.account_id)
    assert sorted(line.line for line in lines) == ["first", "odd", "second"]

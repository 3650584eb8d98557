"""Live tail streams at GET /metrics (issue 18), through a real server (an in-process
client cannot hold a stream open), over SSE and the WebSocket: counted when opened,
open while open, their time when closed, and never as a request's latency."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any

import httpx
import pytest
from tests.api.scrape import Series, moved, scrape, value
from tests.conftest import AppClient
from tests.live import live_async_client
from tests.tail.test_live import _account_with_key, _env, tail
from tests.tail.test_socket import mzm_params, tail_socket
from tests.waiting import eventually

from tidegate.api.request_metrics import CODES


def _open(
    transport: str, base_url: str, headers: dict[str, str]
) -> AbstractAsyncContextManager[Any]:
    if transport == "sse":
        return tail(base_url, headers)
    return tail_socket(base_url, mzm_params(), headers)


async def _settled(http: httpx.AsyncClient) -> Series:
    """A scrape with no tail stream or request left on the server. It is shared: a
    stream an earlier test hung up ends its session first and its request a moment
    later, and counted between the two it made this test's request look like none (the
    in-flight gauge fell by one as this stream raised it by one)."""
    series: Series = {}

    async def settled() -> bool:
        nonlocal series
        series = await scrape(http)
        streams = sum(
            value(series, "tidegate_tail_sessions_open", transport=transport)
            for transport in ("sse", "websocket")
        )
        return streams == 0 and value(series, "tidegate_http_requests_in_flight", group="tail") == 0

    await eventually(settled, every=0.1, what="no tail stream or request left on the server")
    return series


@pytest.mark.parametrize("transport", ["sse", "websocket"])
async def test_a_live_tail_stream_is_counted_while_open_and_when_closed(
    client: AppClient, shared_live_server: Any, transport: str
) -> None:
    server = shared_live_server(env=_env(client))
    account, _key = await _account_with_key(client)
    async with live_async_client(server.base_url) as http:
        before = await _settled(http)
        async with _open(transport, server.base_url, account.headers):
            during = await scrape(http)
        # The server sees the stream end when the client hangs up: wait for it.
        after: Series = {}

        async def closed() -> bool:
            nonlocal after
            after = await scrape(http)
            return moved(before, after, "tidegate_tail_sessions_open", transport=transport) == 0

        await eventually(closed, every=0.1, what="the server saw the stream close")
    assert moved(before, during, "tidegate_tail_sessions_total", transport=transport) == 1
    assert moved(before, during, "tidegate_tail_sessions_open", transport=transport) == 1
    assert moved(before, during, "tidegate_http_requests_in_flight", group="tail") == 1
    assert moved(before, after, "tidegate_tail_sessions_open", transport=transport) == 0
    duration = "tidegate_tail_session_duration_seconds_count"
    assert moved(before, after, duration, transport=transport) == 1
    # A stream is not a request's latency.
    latency = "tidegate_http_request_duration_seconds_count"
    assert all(moved(before, after, latency, group="tail", code=code) == 0 for code in CODES)

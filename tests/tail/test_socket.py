"""``/ws/tail`` through real servers with a real WebSocket client (``websockets``): the
exchanges of ``mzm log tail`` and ``logdna-cli tail`` as their public sources make them,
``{e, p}`` frames of lines ingested after connecting, filters, tenancy, ``indexonly``
lines, refusals before the handshake, revocation, and delivery across servers through
Redis."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import pytest
from tests.conftest import REDIS_URL, AppClient
from tests.export.helpers import BASE_MS
from tests.factories import make_account, make_tenant
from tests.live import live_async_client
from tests.tail.test_live import (
    _account_with_key,
    _env,
    add_indexonly_rule,
    ingest,
    remote_and_local_lines_arrive,
)
from tests.tail.test_revocation import _service_key
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

GENEROUS_S = 30.0
# What mzm sends with its WebSocket (@mzm/command-log/tail/web-socket.ts).
MZM_HEADERS = {"X-User-Agent": "@mzm-cli/0.0.0"}
MZM_USER_AGENT = "@mzm-cli/0.0.0"


@dataclass
class Frames:
    """The frames of one connection, read in the background."""

    socket: ClientConnection
    frames: list[dict[str, Any]] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    closed: asyncio.Event = field(default_factory=asyncio.Event)

    def lines(self) -> list[dict[str, Any]]:
        return [line for frame in self.frames if frame["e"] == "p" for line in frame["p"]]

    def meta(self) -> list[dict[str, Any]]:
        return [frame["p"] for frame in self.frames if frame["e"] == "meta"]

    async def read(self) -> None:
        try:
            async for message in self.socket:
                assert isinstance(message, str), "frames are text"
                frame = json.loads(message)  # logdna-cli exits on a frame that is not JSON
                assert set(frame) == {"e", "p"}, frame
                self.frames.append(frame)
                self.arrived.set()
        except ConnectionClosed:
            pass
        finally:
            self.closed.set()
            self.arrived.set()

    async def wait_for(self, count: int) -> list[dict[str, Any]]:
        deadline = asyncio.get_running_loop().time() + GENEROUS_S
        while len(self.lines()) < count:
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0 or self.closed.is_set():
                raise AssertionError(f"got {len(self.lines())} of {count} lines: {self.frames}")
            self.arrived.clear()
            try:
                await asyncio.wait_for(self.arrived.wait(), remaining)
            except TimeoutError:
                pass
        return self.lines()


def ws_url(base_url: str, params: dict[str, Any] | list[tuple[str, Any]]) -> str:
    return base_url.replace("http://", "ws://", 1) + "/ws/tail?" + urlencode(params)


@asynccontextmanager
async def tail_socket(
    base_url: str,
    params: dict[str, Any] | list[tuple[str, Any]],
    headers: dict[str, str] | None = None,
    user_agent: str | None = None,
) -> AsyncIterator[Frames]:
    async with connect(
        ws_url(base_url, params), additional_headers=headers, user_agent_header=user_agent
    ) as socket:
        frames = Frames(socket)
        reader = asyncio.create_task(frames.read())
        try:
            # The first frame says the stream is subscribed: lines from now on arrive.
            await asyncio.wait_for(frames.arrived.wait(), GENEROUS_S)
            assert frames.frames[0] == {"e": "meta", "p": {"type": "ready"}}, frames.frames
            yield frames
        finally:
            reader.cancel()
            try:
                await reader
            except asyncio.CancelledError:
                pass


def mzm_params(
    query: str = "", *, hosts: str = "", tags: str = "", levels: str = "", apps: str = ""
) -> list[tuple[str, str]]:
    """``mzm log tail``'s query string: q, then hosts, tags, levels, apps, each present
    (empty when not given), in this order."""
    return [("q", query), ("hosts", hosts), ("tags", tags), ("levels", levels), ("apps", apps)]


async def _ingest_tagged(
    base_url: str, key: str, lines: list[dict[str, Any]], *, host: str, tags: str
) -> None:
    async with live_async_client(base_url) as http:
        response = await http.post(
            "/logs/ingest",
            params={"hostname": host, "now": BASE_MS, "tags": tags},
            headers={"apikey": key},
            json={"lines": lines},
        )
        assert response.status_code == 200, response.text


async def test_mzm_log_tail_receives_lines_ingested_after_connecting(
    client: AppClient, shared_live_server: Any
) -> None:
    server = shared_live_server(env=_env(client))
    account, ingestion_key = await _account_with_key(client)
    _other, other_key = await _account_with_key(client)
    _key_id, access_key = await _service_key(client, account)
    token = {"Authorization": f"Token {access_key}", **MZM_HEADERS}
    await ingest(server.base_url, ingestion_key, [{"line": "before connecting"}])
    async with (
        tail_socket(server.base_url, mzm_params(), token, MZM_USER_AGENT) as everything,
        tail_socket(
            server.base_url, mzm_params("level:error -app:noise"), token, MZM_USER_AGENT
        ) as errors,
        tail_socket(
            server.base_url, mzm_params(hosts="db-1", apps="pg"), token, MZM_USER_AGENT
        ) as db_only,
        tail_socket(server.base_url, mzm_params(tags="prod"), token, MZM_USER_AGENT) as prod,
        tail_socket(server.base_url, mzm_params("_account:*"), token, MZM_USER_AGENT) as default,
    ):
        await ingest(server.base_url, other_key, [{"line": "other account"}])
        await ingest(
            server.base_url,
            ingestion_key,
            [
                {"line": "hello", "app": "api", "level": "INFO", "meta": {"user": 1}},
                {"line": "boom", "app": "api", "level": "ERROR"},
                {"line": "loud", "app": "noise", "level": "error"},
            ],
        )
        await _ingest_tagged(
            server.base_url,
            ingestion_key,
            [{"line": "db line", "app": "pg"}],
            host="db-1",
            tags="Prod,eu",
        )
        got = await everything.wait_for(4)
        assert [item["_line"] for item in got] == ["hello", "boom", "loud", "db line"]
        # What mzm's pprint reads: _host, _app, level, _line (or message), _ts.
        first = got[0]
        assert first["_host"] == "h"
        assert first["_app"] == "api"
        assert first["level"] == "INFO"
        assert first["_meta"] == {"user": 1}
        assert isinstance(first["_ts"], int)
        assert got[3]["_tag"] == ["Prod", "eu"]
        assert [item["_line"] for item in await errors.wait_for(1)] == ["boom"]
        assert [item["_line"] for item in await db_only.wait_for(1)] == ["db line"]
        assert [item["_line"] for item in await prod.wait_for(1)] == ["db line"]
        assert len(await default.wait_for(4)) == 4
        await asyncio.sleep(0.3)
        assert len(everything.lines()) == 4
        assert len(errors.lines()) == 1
        assert len(prod.lines()) == 1
        # Every frame is {e, p}: lines under "p", everything else "meta".
        assert {frame["e"] for frame in everything.frames} <= {"p", "meta"}


async def test_logdna_cli_tail_with_a_service_key_in_the_query(
    client: AppClient, shared_live_server: Any
) -> None:
    """logdna-cli builds ``/ws/tail?<query string>`` from its credentials plus ``q`` and
    the comma lists (``-h``, ``-a``, ``-l``, ``-t``; ``-j`` adds ``json=true``); its
    ``ws`` library pings every 30 s. Here the credential is the key form of the query."""
    server = shared_live_server(env=_env(client))
    account, ingestion_key = await _account_with_key(client)
    _key_id, service_key = await _service_key(client, account)
    params = [
        ("servicekey", service_key),
        ("q", "timed"),
        ("levels", "error,warn"),
        ("json", "true"),
    ]
    async with tail_socket(server.base_url, params) as stream:
        await stream.socket.ping()
        await ingest(
            server.base_url,
            ingestion_key,
            [
                {"line": "request timed out", "level": "warn", "app": "web"},
                {"line": "request timed out", "level": "info"},
                {"line": "other", "level": "error"},
            ],
        )
        (line,) = await stream.wait_for(1)
        # What logdna-cli's renderLine reads: _host (lines without it are skipped), _ts,
        # _app, level, _line.
        assert (line["_host"], line["_app"], line["level"], line["_line"]) == (
            "h",
            "web",
            "warn",
            "request timed out",
        )


async def test_indexonly_lines_reach_the_socket(client: AppClient, shared_live_server: Any) -> None:
    server = shared_live_server(env=_env(client))
    account, ingestion_key = await _account_with_key(client)
    await add_indexonly_rule(client, account, "debug")
    async with tail_socket(server.base_url, mzm_params(), account.headers) as stream:
        await ingest(server.base_url, ingestion_key, [{"line": "debug detail"}, {"line": "kept"}])
        assert sorted(item["_line"] for item in await stream.wait_for(2)) == [
            "debug detail",
            "kept",
        ]


async def _refused(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    with pytest.raises(InvalidStatus) as refused:
        async with connect(url, additional_headers=headers):
            pass
    response = refused.value.response
    return response.status_code, json.loads(response.body or b"{}")


async def test_refusals_are_http_answers_with_the_legacy_body(
    client: AppClient, shared_live_server: Any
) -> None:
    """Refused before the handshake: the HTTP status and body tell why (logdna-cli
    looks for "401" in the error to tell its user to log in again)."""
    server = shared_live_server(env=_env(client))
    tenant = await make_tenant(client.database_url)
    account = await make_account(client, tenant)
    base = server.base_url
    status, body = await _refused(ws_url(base, mzm_params()))
    assert status == 401
    assert body == {
        "error": "Missing credentials: send Authorization: Token <key>",
        "code": "Unauthorized",
        "status": "error",
    }
    status, _body = await _refused(
        ws_url(base, mzm_params()), {"Authorization": "Token sta_" + "0" * 40}
    )
    assert status == 401
    status, _body = await _refused(ws_url(base, [("servicekey", "nope")]))
    assert status == 401
    # An enterprise key reads no account's lines unless it names one.
    status, body = await _refused(ws_url(base, mzm_params()), tenant.headers)
    assert status == 403, body
    status, body = await _refused(ws_url(base, mzm_params("(open")), account.headers)
    assert status == 400
    assert "column" in body["error"]
    # The same account, delegated, is fine.
    delegated = {**tenant.headers, "x-delegate-account-id": account.account_id}
    async with tail_socket(base, mzm_params(), delegated) as stream:
        assert stream.meta() == [{"type": "ready"}]


async def test_deleting_the_key_closes_the_socket_with_policy_violation(
    client: AppClient, live_server_factory: Any
) -> None:
    server = live_server_factory(env=_env(client, TIDEGATE_TAIL_RECHECK_S="1"))
    account = await make_account(client, await make_tenant(client.database_url))
    key_id, secret = await _service_key(client, account)
    async with tail_socket(
        server.base_url, mzm_params(), {"Authorization": f"Token {secret}"}
    ) as stream:
        deleted = await client.delete(f"/v1/config/keys/{key_id}", headers=account.headers)
        assert deleted.status_code == 200, deleted.text
        await asyncio.wait_for(stream.closed.wait(), GENEROUS_S)
        assert stream.meta()[-1] == {"type": "error", "error": "The key was deleted"}
        assert stream.socket.close_code == 1008
        assert stream.socket.close_reason == "The key was deleted"
    status, _body = await _refused(
        ws_url(server.base_url, mzm_params()), {"Authorization": f"Token {secret}"}
    )
    assert status == 401


@pytest.mark.redis
async def test_socket_sees_lines_ingested_on_another_server_through_redis(
    client: AppClient, live_server_factory: Any
) -> None:
    """Two server processes sharing the database and Redis: a line ingested on one
    reaches a socket on the other, and its own lines reach it once."""
    env = _env(client, TIDEGATE_REDIS_URL=REDIS_URL)
    watching = live_server_factory(env=env)
    # Two processes, each one worker (as two hosts): a two-worker server is the same
    # fan-out, and starts too slowly on a loaded two-core machine.
    ingesting = live_server_factory(env=env)
    account, key = await _account_with_key(client)
    async with tail_socket(watching.base_url, mzm_params("-skip"), account.headers) as stream:
        await remote_and_local_lines_arrive(stream, watching, ingesting, key)


async def test_a_connection_counts_once_against_the_rate_limit(
    client: AppClient, live_server_factory: Any
) -> None:
    """The handshake is one request of the key's rate limit, however many frames the
    stream then carries; past the limit the next handshake is refused with 429."""
    server = live_server_factory(env={**_env(client), "TIDEGATE_RATE_LIMIT_PER_MINUTE": "1"})
    account, ingestion_key = await _account_with_key(client)
    _key_id, access_key = await _service_key(client, account)
    token = {"Authorization": f"Token {access_key}"}
    async with tail_socket(server.base_url, mzm_params(), token) as stream:
        # The handshake took the key's one request of the minute: the next handshake,
        # made at once (nothing in between), is refused...
        status, body = await _refused(ws_url(server.base_url, mzm_params()), token)
        assert status == 429, body
        assert body["code"] == "TooManyRequests"
        # ...while the open stream carries every frame: frames are not requests.
        for number in range(5):
            await ingest(server.base_url, ingestion_key, [{"line": f"line {number}"}])
        assert len(await stream.wait_for(5)) == 5

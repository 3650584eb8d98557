"""GET /v1/tail through real servers: server-sent events of lines ingested after
subscribing, filters, tenancy, indexonly lines, and delivery across servers via Redis."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from redis.asyncio import Redis
from tests.conftest import REDIS_PREFIX, REDIS_URL, AppClient
from tests.export.helpers import BASE_MS
from tests.factories import AccountCtx, insert_key, make_account, make_tenant
from tests.live import live_async_client
from tests.tail.channels import left_the_channel


@dataclass
class Stream:
    """The events of one SSE response, read in the background."""

    events: list[tuple[str, Any]] = field(default_factory=list)
    # Each event's ``id:`` (None without one), in the order of ``events``.
    ids: list[str | None] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    def lines(self) -> list[dict[str, Any]]:
        return [data for name, data in self.events if name == "message"]

    def line_ids(self) -> list[str | None]:
        return [i for (name, _), i in zip(self.events, self.ids, strict=True) if name == "message"]

    async def wait_for(self, count: int, *, timeout: float = 30) -> list[dict[str, Any]]:
        deadline = asyncio.get_running_loop().time() + timeout
        while len(self.lines()) < count:
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                raise AssertionError(f"got {len(self.lines())} of {count} lines: {self.events}")
            self.arrived.clear()
            try:
                await asyncio.wait_for(self.arrived.wait(), remaining)
            except TimeoutError:
                pass
        return self.lines()


async def _read(response: httpx.Response, stream: Stream, ready: asyncio.Event) -> None:
    name, data, event_id = "message", "", None
    async for raw in response.aiter_lines():
        if raw.startswith(":"):
            stream.comments.append(raw)
        elif raw.startswith("event: "):
            name = raw.removeprefix("event: ")
        elif raw.startswith("data: "):
            data = raw.removeprefix("data: ")
        elif raw.startswith("id: "):
            event_id = raw.removeprefix("id: ")
        elif raw == "":
            if data:
                stream.events.append((name, json.loads(data)))
                stream.ids.append(event_id)
                if name == "ready":
                    ready.set()
                stream.arrived.set()
            name, data, event_id = "message", "", None


@asynccontextmanager
async def reading(response: httpx.Response) -> AsyncIterator[Stream]:
    """The events of an open SSE ``response``, read in the background from its
    ``ready`` on (waited for here)."""
    assert response.status_code == 200, await response.aread()
    assert response.headers["content-type"].startswith("text/event-stream")
    stream = Stream()
    ready = asyncio.Event()
    reader = asyncio.create_task(_read(response, stream, ready))
    try:
        await asyncio.wait_for(ready.wait(), 30)
        yield stream
    finally:
        reader.cancel()
        try:
            await reader
        except (asyncio.CancelledError, httpx.HTTPError):
            pass


@asynccontextmanager
async def tail(base_url: str, headers: dict[str, str], **params: Any) -> AsyncIterator[Stream]:
    async with (
        live_async_client(base_url) as http,
        http.stream("GET", "/v1/tail", headers=headers, params=params) as response,
        reading(response) as stream,
    ):
        yield stream


async def ingest(base_url: str, key: str, lines: list[dict[str, Any]], host: str = "h") -> None:
    async with live_async_client(base_url) as http:
        response = await http.post(
            "/logs/ingest",
            params={"hostname": host, "now": BASE_MS},
            headers={"apikey": key},
            json={"lines": lines},
        )
        assert response.status_code == 200, response.text


def _env(client: AppClient, **extra: str) -> dict[str, str]:
    return {
        "TIDEGATE_DATABASE_URL": client.database_url,
        "TIDEGATE_BOOTSTRAP": "0",
        "TIDEGATE_RATE_LIMIT_PER_MINUTE": "0",
        **extra,
    }


async def _account_with_key(client: AppClient) -> tuple[AccountCtx, str]:
    account = await make_account(client, await make_tenant(client.database_url))
    key = await insert_key(client.database_url, kind="ingestion", account_id=account.account_id)
    return account, key


async def test_tail_streams_lines_ingested_after_subscribing(
    client: AppClient, shared_live_server: Any
) -> None:
    server = shared_live_server(env=_env(client))
    account, key = await _account_with_key(client)
    _other, other_key = await _account_with_key(client)
    await ingest(server.base_url, key, [{"line": "before subscribing"}])
    async with (
        tail(server.base_url, account.headers) as everything,
        tail(server.base_url, account.headers, query="level:error -app:noise") as errors,
        tail(server.base_url, account.headers, hosts="db-1", apps="pg") as db_only,
    ):
        await ingest(server.base_url, other_key, [{"line": "other account"}])
        await ingest(
            server.base_url,
            key,
            [
                {"line": "hello", "app": "api", "level": "INFO", "meta": {"user": 1}},
                {"line": "boom", "app": "api", "level": "ERROR"},
                {"line": "loud", "app": "noise", "level": "error"},
            ],
        )
        await ingest(server.base_url, key, [{"line": "db line", "app": "pg"}], host="db-1")
        got = await everything.wait_for(4)
        assert [item["_line"] for item in got] == ["hello", "boom", "loud", "db line"]
        assert got[0]["_host"] == "h"
        assert got[0]["_app"] == "api"
        assert got[0]["level"] == "INFO"
        assert got[0]["_meta"] == {"user": 1}
        assert [item["_line"] for item in await errors.wait_for(1)] == ["boom"]
        assert [item["_line"] for item in await db_only.wait_for(1)] == ["db line"]
        await asyncio.sleep(0.3)
        assert len(everything.lines()) == 4
        assert len(errors.lines()) == 1


async def test_tail_refuses_bad_queries_and_missing_credentials(
    client: AppClient, shared_live_server: Any
) -> None:
    server = shared_live_server(env=_env(client))
    account, _key = await _account_with_key(client)
    async with server.async_client() as http:
        bad = await http.get("/v1/tail", params={"query": "(open"}, headers=account.headers)
        assert bad.status_code == 400
        assert bad.json()["status"] == "error"
        assert "column" in bad.json()["error"]
        assert (await http.get("/v1/tail")).status_code == 401


async def add_indexonly_rule(client: AppClient, account: AccountCtx, query: str) -> None:
    """An active exclusion rule keeping the lines it matches for live tail only."""
    rule = await client.post(
        "/v1/config/ingestion/exclusions",
        json={"title": query, "query": query, "indexonly": True, "active": True},
        headers=account.headers,
    )
    assert rule.status_code in (200, 201), rule.text


async def test_indexonly_lines_reach_tail_but_not_export(
    client: AppClient, shared_live_server: Any
) -> None:
    server = shared_live_server(env=_env(client))
    account, key = await _account_with_key(client)
    await add_indexonly_rule(client, account, "debug")
    async with tail(server.base_url, account.headers) as stream:
        await ingest(server.base_url, key, [{"line": "debug detail"}, {"line": "kept"}])
        assert sorted(item["_line"] for item in await stream.wait_for(2)) == [
            "debug detail",
            "kept",
        ]
    exported = await client.get(
        "/v2/export",
        params={"from": BASE_MS - 3_600_000, "to": 4_000_000_000_000},
        headers=account.headers,
    )
    assert [item["_line"] for item in exported.json()["lines"]] == ["kept"]


async def test_stored_lines_arrive_with_their_id_and_their_context_is_found(
    client: AppClient, shared_live_server: Any
) -> None:
    """Lines are published after their transaction commits, with the ids the writer
    gave them: a line that arrived live has its context at once. An indexonly line was
    never stored and has no id."""
    server = shared_live_server(env=_env(client))
    account, key = await _account_with_key(client)
    await add_indexonly_rule(client, account, "debug")
    await ingest(server.base_url, key, [{"line": "before", "app": "api"}])
    async with tail(server.base_url, account.headers) as stream:
        sent = ["debug detail", "kept", "after"]
        await ingest(server.base_url, key, [{"line": line, "app": "api"} for line in sent])
        got = {item["_line"]: item for item in await stream.wait_for(3)}
    assert "_id" not in got["debug detail"]
    exported = await client.get(
        "/v2/export",
        params={"from": BASE_MS - 3_600_000, "to": 4_000_000_000_000},
        headers=account.headers,
    )
    ids = {item["_line"]: item["_id"] for item in exported.json()["lines"]}
    assert got["kept"]["_id"] == ids["kept"]
    assert got["after"]["_id"] == ids["after"]
    context = await client.get(
        "/v1/export/context", params={"line": got["kept"]["_id"]}, headers=account.headers
    )
    assert context.status_code == 200, context.text
    found = context.json()
    assert found["line"]["_line"] == "kept"
    assert [item["_line"] for item in found["before"]] == ["before"]
    assert [item["_line"] for item in found["after"]] == ["after"]


async def test_a_stream_opened_again_is_given_the_lines_it_missed(
    client: AppClient, shared_live_server: Any
) -> None:
    """A stored line's event carries its id. A stream opened with the last id it had
    (``Last-Event-ID``, as an EventSource reconnecting sends it) first gets the lines
    stored since that its filters select, oldest first, then the live ones; another
    account's lines never. A header that is not a line's id is ignored."""
    server = shared_live_server(env=_env(client))
    account, key = await _account_with_key(client)
    _other, other_key = await _account_with_key(client)
    async with tail(server.base_url, account.headers) as first:
        await ingest(server.base_url, key, [{"line": "seen", "app": "api"}])
        [seen] = await first.wait_for(1)
    assert first.line_ids() == [seen["_id"]]
    # While no stream is open.
    missed = [{"line": "missed one", "app": "api"}, {"line": "missed two", "app": "web"}]
    await ingest(server.base_url, key, missed)
    await ingest(server.base_url, other_key, [{"line": "another account's"}])

    resume = {**account.headers, "Last-Event-ID": seen["_id"]}
    async with (
        tail(server.base_url, resume) as again,
        tail(server.base_url, resume, apps="api") as api_only,
    ):
        caught_up = await again.wait_for(2)
        assert [item["_line"] for item in caught_up] == ["missed one", "missed two"]
        assert [item["_line"] for item in await api_only.wait_for(1)] == ["missed one"]
        await ingest(server.base_url, key, [{"line": "live", "app": "api"}])
        got = await again.wait_for(3)
        assert [item["_line"] for item in got] == ["missed one", "missed two", "live"]
        assert again.line_ids() == [item["_id"] for item in got]
        assert [item["_line"] for item in await api_only.wait_for(2)] == ["missed one", "live"]

    async with tail(server.base_url, {**account.headers, "Last-Event-ID": "seen"}) as fresh:
        await ingest(server.base_url, key, [{"line": "after"}])
        assert [item["_line"] for item in await fresh.wait_for(1)] == ["after"]


async def remote_and_local_lines_arrive(
    stream: Any, watching: Any, ingesting: Any, key: str, count: int = 6
) -> None:
    """Lines ingested on ``ingesting`` and on ``watching`` itself all reach ``stream``
    (a tail on ``watching`` filtering out ``skip``), once each."""
    for number in range(count):
        await ingest(ingesting.base_url, key, [{"line": f"remote {number}"}, {"line": "skip"}])
    await ingest(watching.base_url, key, [{"line": "local"}])
    got = await stream.wait_for(count + 1)
    assert sorted(item["_line"] for item in got) == sorted(
        [f"remote {number}" for number in range(count)] + ["local"]
    )
    # Stored lines carry their ids across servers too (the Redis message has them).
    assert all(item.get("_id", "").isdigit() for item in got), got
    await asyncio.sleep(0.3)
    assert len(stream.lines()) == count + 1


@pytest.mark.redis
async def test_tail_sees_lines_ingested_on_another_server_through_redis(
    client: AppClient, live_server_factory: Any
) -> None:
    env = _env(client, TIDEGATE_REDIS_URL=REDIS_URL)
    watching = live_server_factory(env=env)
    ingesting = live_server_factory(env=env, workers=2)
    account, key = await _account_with_key(client)
    async with tail(watching.base_url, account.headers, query="-skip") as stream:
        await remote_and_local_lines_arrive(stream, watching, ingesting, key)
    # The stream gone, its server notices and leaves the account's channel.
    probe = Redis.from_url(REDIS_URL)
    channel = f"{REDIS_PREFIX}tail:{account.account_id}"
    try:
        await left_the_channel(probe, channel)
    finally:
        await probe.aclose()


async def test_an_open_stream_does_not_hold_up_shutdown(
    client: AppClient, live_server_factory: Any
) -> None:
    if client.database_url.startswith("postgresql"):
        pytest.skip("about the HTTP server, not the database")
    server = live_server_factory(env=_env(client))
    account, _key = await _account_with_key(client)
    async with tail(server.base_url, account.headers):
        await asyncio.to_thread(server.stop)
        # uvicorn re-raises the SIGTERM it handled once it has shut down cleanly.
        assert server.process is not None
        assert server.process.returncode in (0, -15)
    log = server.log.read_text()
    assert "Application shutdown complete" in log
    # The server ended the stream when it was asked to stop; it was not left open until
    # uvicorn's graceful timeout (10 s) cancelled it.
    assert "timeout graceful shutdown exceeded" not in log, log

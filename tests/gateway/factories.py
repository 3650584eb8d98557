"""Factories for data-plane tests: an account with a gateway route, an access key and a
pipeline wired from a source through processors to destinations; lines read back from
the database directly; a tiny local HTTP destination."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx
from sqlalchemy import func, select
from tests.factories import AccountCtx, make_account, make_tenant
from tests.pipelines.factories import (
    add_node,
    enable_throttle,
    make_pipeline,
    make_route,
    publish,
)

from tidegate.db.engine import Database
from tidegate.models import LogLine


async def new_account(client: httpx.AsyncClient, *, throttle: bool = True) -> AccountCtx:
    database_url: str = client.database_url  # type: ignore[attr-defined]
    return await new_account_on(client, database_url, throttle=throttle)


async def new_account_on(
    client: httpx.AsyncClient, database_url: str, *, throttle: bool = True
) -> AccountCtx:
    tenant = await make_tenant(database_url)
    account = await make_account(client, tenant)
    if throttle:
        await enable_throttle(client, account)
    return account


async def make_access_key(client: httpx.AsyncClient, account: AccountCtx, route_id: str) -> str:
    response = await client.post(
        f"/v3/pipeline/gateway-route/{route_id}/access-key",
        json={"type": "generated"},
        headers=account.headers,
    )
    assert response.status_code == 201, response.text
    key: str = response.json()["data"]["key"]
    return key


async def add_signing_key(
    client: httpx.AsyncClient, account: AccountCtx, route_id: str, key: str
) -> str:
    response = await client.put(
        f"/v3/pipeline/gateway-route/{route_id}/signing-key",
        json={"key": key},
        headers=account.headers,
    )
    assert response.status_code in (200, 201), response.text
    key_id: str = response.json()["data"]["id"]
    return key_id


@dataclass
class Wired:
    """A pipeline fed by a gateway route: ``nodes`` maps names given to node ids."""

    account: AccountCtx
    pipeline_id: str
    route_id: str
    key: str
    source_id: str
    nodes: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"/gateway/{self.route_id}"

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Token {self.key}"}


async def wire(
    client: httpx.AsyncClient,
    account: AccountCtx,
    steps: list[tuple[str, str, str, dict[str, Any], list[str]]],
) -> Wired:
    """``steps``: ``(name, kind, type, user_config, inputs)``; inputs name earlier steps
    (``"source"`` is the HTTP source; ``"t.dropped"`` a throttle's second output)."""
    pipeline_id = await make_pipeline(client, account)
    route_id = await make_route(client, account)
    key = await make_access_key(client, account, route_id)
    source_id = await add_node(
        client, account, pipeline_id, "source", {"type": "http", "gateway_route_id": route_id}
    )
    wired = Wired(account, pipeline_id, route_id, key, source_id, {"source": source_id})
    for name, kind, type_, config, inputs in steps:
        refs = []
        for ref in inputs:
            base, dot, output = ref.partition(".")
            refs.append(wired.nodes[base] + (f".{output}" if dot else ""))
        wired.nodes[name] = await add_node(
            client,
            account,
            pipeline_id,
            kind,
            {"type": type_, "title": name, "user_config": config, "inputs": refs},
        )
    await publish(client, account, pipeline_id)
    return wired


async def stored_lines(database_url: str, account_id: str) -> list[LogLine]:
    db = Database.connect(database_url)
    try:
        async with db.read_sessions() as session:
            result = await session.execute(
                select(LogLine).where(LogLine.account_id == account_id).order_by(LogLine.id)
            )
            return list(result.scalars())
    finally:
        await db.dispose()


async def count_lines(database_url: str, account_id: str) -> int:
    db = Database.connect(database_url)
    try:
        async with db.read_sessions() as session:
            result = await session.execute(
                select(func.count()).select_from(LogLine).where(LogLine.account_id == account_id)
            )
            return int(result.scalar_one())
    finally:
        await db.dispose()


def events(count: int, **fields: Any) -> list[dict[str, Any]]:
    return [{"line": f"event {index}", **fields} for index in range(count)]


def unique_id() -> str:
    return uuid.uuid4().hex[:8]


@dataclass
class Received:
    body: bytes
    headers: dict[str, str]


class LocalDestination:
    """A tiny HTTP/1.1 server on 127.0.0.1 run on the test's own loop. ``script`` gives
    the status of each successive request (the last one repeats); ``delay`` seconds
    pass before each answer, or, with ``hold``, each answer waits until the test sets it
    (so a test can tell "answered while the destination was still busy" without a clock).
    """

    def __init__(
        self,
        *,
        script: list[int] | None = None,
        delay: float = 0.0,
        hold: asyncio.Event | None = None,
    ) -> None:
        self.script = script or [200]
        self.delay = delay
        self.hold = hold
        self.received: list[Received] = []
        self.attempts = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/ingest"

    async def __aenter__(self) -> LocalDestination:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):
            writer.close()
        await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                headers = {}
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    if name:
                        headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                status = self.script[min(self.attempts, len(self.script) - 1)]
                self.attempts += 1
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
                try:
                    if self.hold is not None:
                        await self.hold.wait()
                    if self.delay:
                        await asyncio.sleep(self.delay)
                finally:
                    self.in_flight -= 1
                if 200 <= status < 300:
                    self.received.append(Received(body, headers))
                writer.write(
                    f"HTTP/1.1 {status} X\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok".encode()
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()

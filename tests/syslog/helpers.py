"""Sending syslog to a listener and finding the lines by export."""

from __future__ import annotations

import asyncio
import ssl
import time
from datetime import UTC, datetime
from typing import Any

import httpx
from tests.export.helpers import app_state_of

KEY_ELEMENT = "logdna@48950"
WAIT_S = 60.0


def syslog_port(client: httpx.AsyncClient) -> int:
    listener = app_state_of(client).syslog
    assert listener is not None
    return listener.port


def element(key: str, **params: str) -> str:
    """The platform's structured-data element carrying ``key``."""
    extra = "".join(f' {name}="{value}"' for name, value in params.items())
    return f'[{KEY_ELEMENT} key="{key}"{extra}]'


def rfc5424(key: str, message: str, *, pri: int = 14, host: str = "web-1", app: str = "api") -> str:
    """A line as the platform's rsyslog template writes it (the time: now)."""
    now = datetime.now(UTC).isoformat(timespec="milliseconds")
    return f"<{pri}>1 {now} {host} {app} 77 - {element(key)} {message}"


def counted(frame: str) -> bytes:
    data = frame.encode()
    return b"%d %s" % (len(data), data)


async def send(port: int, *chunks: bytes, tls: ssl.SSLContext | None = None) -> None:
    """Open a connection, write ``chunks`` one by one, close it."""
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=tls)
    try:
        for chunk in chunks:
            writer.write(chunk)
            await writer.drain()
    finally:
        writer.close()
        await writer.wait_closed()


async def exported(
    client: httpx.AsyncClient, headers: dict[str, str], **params: Any
) -> list[dict[str, Any]]:
    now = int(time.time())
    query = {"from": now - 7 * 86400, "to": now + 7 * 86400, **params}
    response = await client.get("/v2/export", params=query, headers=headers)
    assert response.status_code == 200, response.text
    lines: list[dict[str, Any]] = response.json()["lines"]
    return lines


async def wait_for_lines(
    client: httpx.AsyncClient, headers: dict[str, str], count: int, **params: Any
) -> list[dict[str, Any]]:
    """The account's exported lines once there are ``count`` of them (fails after a
    generous deadline: an outcome waited for, not a time measured)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        lines = await exported(client, headers, **params)
        if len(lines) >= count or time.monotonic() > deadline:
            assert len(lines) == count, lines
            return lines
        await asyncio.sleep(0.05)

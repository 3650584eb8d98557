"""The listener with a certificate: TLS only (Python's ssl client, in process), and its
connection cap."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from prometheus_client import REGISTRY
from tests.conftest import AppClient
from tests.ingest.factories import make_ingestor
from tests.syslog.certs import self_signed
from tests.syslog.conftest import syslog_app
from tests.syslog.helpers import rfc5424, send, syslog_port, wait_for_lines


@pytest.fixture
async def tls_client(database_url: str, tmp_path: Path) -> AsyncIterator[AppClient]:
    cert, key = self_signed(tmp_path)
    async with syslog_app(
        database_url,
        tmp_path / "data",
        syslog_tls_cert=str(cert),
        syslog_tls_key=str(key),
        syslog_max_connections=1,
    ) as http:
        yield http


def client_context(cert: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(cert))


def refused_connections() -> float:
    sample = REGISTRY.get_sample_value("tidegate_syslog_connections_total", {"outcome": "refused"})
    return sample or 0.0


async def test_tls_lines_are_stored_and_plain_text_is_not(
    tls_client: AppClient, tmp_path: Path
) -> None:
    who = await make_ingestor(tls_client, enable_syslog=True)
    port = syslog_port(tls_client)
    tls = client_context(tmp_path / "syslog.crt")
    # Plain text to the TLS port is no TLS handshake: nothing is stored from it.
    await send(port, (rfc5424(who.key, "in clear") + "\n").encode())
    await send(port, (rfc5424(who.key, "over tls") + "\n").encode(), tls=tls)
    lines = await wait_for_lines(tls_client, who.account.headers, 1)
    assert [line["_line"] for line in lines] == ["over tls"]


async def test_connections_past_the_cap_are_closed_the_others_served(
    tls_client: AppClient, tmp_path: Path
) -> None:
    who = await make_ingestor(tls_client, enable_syslog=True)
    port = syslog_port(tls_client)
    tls = client_context(tmp_path / "syslog.crt")
    before = refused_connections()
    _reader, holder = await asyncio.open_connection("127.0.0.1", port, ssl=tls)
    try:
        holder.write((rfc5424(who.key, "first connection") + "\n").encode())
        await holder.drain()
        await wait_for_lines(tls_client, who.account.headers, 1)
        second_reader, second = await asyncio.open_connection("127.0.0.1", port, ssl=tls)
        # The second is closed by the server at once (the cap is 1).
        assert await second_reader.read() == b""
        second.close()
        assert refused_connections() - before == 1
        holder.write((rfc5424(who.key, "still served") + "\n").encode())
        await holder.drain()
        await wait_for_lines(tls_client, who.account.headers, 2)
    finally:
        holder.close()
        await holder.wait_closed()

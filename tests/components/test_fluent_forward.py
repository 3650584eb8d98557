"""The ``fluent`` source fed over Fluent Forward (msgpack over TCP) by a real client
(``fluent-logger`` from PyPI, Message mode) and by the protocol's other modes written
as its specification documents them (Forward, PackedForward, CompressedPackedForward,
with ``chunk`` acks), into a live listener of the app; a wrong key is refused before
the payload is read."""

from __future__ import annotations

import asyncio
import gzip
import socket
from collections.abc import AsyncIterator
from typing import Any

import msgpack
import pytest
from fluent import sender
from tests.components.factories import wire_source
from tests.conftest import AppClient, make_settings, running_client
from tests.gateway.factories import new_account, stored_lines
from tests.waiting import eventually

from tidegate.gateway.forward import ForwardListener


@pytest.fixture(scope="module")
async def client(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[AppClient]:
    settings = make_settings(database_url, tmp_path_factory.mktemp("data"), fluent_forward_port=0)
    async with running_client(settings) as http:
        yield http


def _listener(client: AppClient) -> ForwardListener:
    app = client._transport.app  # type: ignore[attr-defined]
    listener = app.state.tidegate.forward
    assert listener is not None
    return listener


def _exchange(port: int, messages: list[Any], *, acks: int) -> list[Any]:
    """Sends msgpack ``messages`` on one connection; reads ``acks`` answers."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        for message in messages:
            conn.sendall(msgpack.packb(message, use_bin_type=True))
        unpacker = msgpack.Unpacker(raw=False)
        answers: list[Any] = []
        while len(answers) < acks:
            data = conn.recv(4096)
            if not data:
                break
            unpacker.feed(data)
            answers.extend(unpacker)
        return answers


async def test_fluent_logger_message_mode(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire_source(client, account, "fluent", {"decoding": "json"})
    port = _listener(client).port

    def send() -> None:
        logger = sender.FluentSender(wired.key, host="127.0.0.1", port=port)
        try:
            assert logger.emit("web", {"line": "from fluent-logger", "level": "info"})
            assert logger.emit_with_time("web", 1_700_000_000, {"line": "with a time"})
        finally:
            logger.close()

    await asyncio.to_thread(send)
    lines = await eventually(
        lambda: _two(client, account.account_id), what="the two records stored"
    )
    assert [line.line for line in lines] == ["from fluent-logger", "with a time"]
    assert lines[1].ts == 1_700_000_000_000
    assert lines[0].meta is not None
    assert lines[0].meta["tag"] == "web"


async def _two(client: AppClient, account_id: str) -> Any:
    lines = await stored_lines(client.database_url, account_id)
    return lines if len(lines) >= 2 else None


async def test_forward_packed_and_compressed_modes_with_acks(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire_source(client, account, "fluent", {})
    event_time = msgpack.ExtType(
        0, (1_700_000_001).to_bytes(4, "big") + (5_000_000).to_bytes(4, "big")
    )
    packed = b"".join(msgpack.packb([1_700_000_002, {"line": f"packed {n}"}]) for n in range(2))
    messages = [
        [f"{wired.key}.app", [[1_700_000_000, {"line": "forward"}]], {"chunk": "c1"}],
        [f"{wired.key}.app", [[event_time, {"line": "event time"}]]],
        [f"{wired.key}.app", packed, {"chunk": "c2", "size": 2}],
        [
            f"{wired.key}.app",
            gzip.compress(msgpack.packb([1_700_000_003, {"line": "gzip"}])),
            {"chunk": "c3", "compressed": "gzip"},
        ],
    ]
    port = _listener(client).port
    acks = await asyncio.to_thread(_exchange, port, messages, acks=3)
    assert acks == [{"ack": "c1"}, {"ack": "c2"}, {"ack": "c3"}]
    lines = await stored_lines(client.database_url, account.account_id)
    assert [line.line for line in lines] == [
        "forward",
        "event time",
        "packed 0",
        "packed 1",
        "gzip",
    ]
    assert lines[1].ts == 1_700_000_001_005


async def test_a_wrong_key_is_refused_before_the_payload(client: AppClient) -> None:
    listener = _listener(client)
    refused = listener.refused

    def send_header_only() -> bytes:
        with socket.create_connection(("127.0.0.1", listener.port), timeout=30) as conn:
            # The array header and the tag, then the start of a 5 MB string that never
            # comes: the server closes the connection without waiting for it.
            conn.sendall(b"\x93" + msgpack.packb("not-a-key.app") + b"\xdb\x00\x50\x00\x00")
            return conn.recv(100)

    assert await asyncio.to_thread(send_header_only) == b""  # closed, nothing answered
    assert listener.refused == refused + 1

"""The Fluent Forward listener: msgpack over TCP (Fluent Bit's ``forward`` output,
Fluentd's ``out_forward``, the ``fluent-logger`` libraries) into gateway routes, inside
each worker of ``tidegate serve`` when ``TIDEGATE_FLUENT_FORWARD_PORT`` is set.

**The credential is the tag's first part:** a sender tags its records ``<access
key>`` or ``<access key>.<rest>`` (the Forward protocol's ``shared_key`` handshake
needs the key in clear on the server, and tidegate keeps access keys hashed). The key
names its route; each Forward message then goes through the gateway exactly as a
request to the route would (``gateway.service.accept``: the key checked again, the
route's admission gates, its pipelines, delivery), as a body of
``FORWARD_MEDIA_TYPE`` that the route's ``fluent`` sources read; ``<rest>`` becomes
the events' ``tag``. A route with signing keys cannot be fed this way (nothing signs a
Forward message): such messages are refused.

Per connection: the tag of each new message is checked as soon as its first bytes are
in (at most ``MAX_TAG_BYTES``), before the rest of the message is read, and a bad key
closes the connection; at most ``MAX_MESSAGE_BYTES`` of one message are held (a longer
one closes the connection); a message is delivered before the next bytes are read
(TCP back-pressure, never a growing buffer); ``chunk`` in a message's option is
answered ``{"ack": <chunk>}`` once every destination took the events, and a message
that is refused or not delivered closes the connection without an ack (the sender
sends it again). Connections are capped and closed after an idle timeout; the
decoding runs in worker threads, so a slow or large sender never holds the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, Final

from tidegate.app_state import AppState
from tidegate.components.sources.fluent import FORWARD_MEDIA_TYPE, TAG_HEADER
from tidegate.components.sources.push import ROUTE_ITSELF
from tidegate.config import Settings
from tidegate.errors import ApiError
from tidegate.gateway.service import GatewayRequest, accept
from tidegate.pipelines import gateway_service

log = logging.getLogger("tidegate.gateway")

__all__ = ["MAX_MESSAGE_BYTES", "MAX_TAG_BYTES", "ForwardListener"]

READ_BYTES: Final = 64 * 1024
MAX_MESSAGE_BYTES: Final = 10 * 1024 * 1024
MAX_TAG_BYTES: Final = 1024


class _Refused(Exception):
    pass


def _tag(prefix: bytes) -> str | None:
    """The tag at the start of a Forward message; None: more bytes needed."""
    import msgpack

    unpacker = msgpack.Unpacker(raw=False, max_buffer_size=MAX_TAG_BYTES)
    unpacker.feed(prefix[:MAX_TAG_BYTES])
    try:
        size = unpacker.read_array_header()
        tag = unpacker.unpack()
    except msgpack.OutOfData:
        if len(prefix) >= MAX_TAG_BYTES:
            raise _Refused("a Forward message must start with [tag, ...]") from None
        return None
    except (ValueError, msgpack.UnpackException):
        raise _Refused("not a Forward message") from None
    if size < 2 or not isinstance(tag, str):
        raise _Refused("a Forward message must start with [tag, ...]")
    return tag


def _chunk(message: bytes) -> Any:
    """The ``chunk`` of a message's option (CPU work: a worker thread)."""
    import msgpack

    try:
        decoded = msgpack.unpackb(message, raw=False, strict_map_key=False, timestamp=0)
    except (ValueError, msgpack.UnpackException):
        return None
    if isinstance(decoded, list) and len(decoded) >= 3 and isinstance(decoded[-1], dict):
        return decoded[-1].get("chunk")
    return None


class ForwardListener:
    def __init__(self, *, state: AppState, settings: Settings) -> None:
        self.state = state
        self.host = settings.fluent_forward_host
        self.requested_port = settings.fluent_forward_port or 0
        self.max_connections = settings.fluent_forward_max_connections
        self.idle_timeout_s = settings.fluent_forward_idle_timeout_s
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self.refused = 0

    @property
    def port(self) -> int:
        if self._server is None or not self._server.sockets:
            raise RuntimeError("the Forward listener is not started")
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._connection,
            self.host,
            self.requested_port,
            reuse_port=self.requested_port != 0,
            limit=READ_BYTES,
        )
        log.info("Fluent Forward listener on %s:%d", self.host, self.port)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is None or len(self._connections) >= self.max_connections:
            writer.close()
            return
        self._connections.add(task)
        try:
            await self._read(reader, writer)
        except _Refused as error:
            self.refused += 1
            log.info("Fluent Forward connection closed: %s", error)
        except OSError as error:
            log.info("Fluent Forward connection ended: %s", type(error).__name__)
        finally:
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                async with asyncio.timeout(5):
                    await writer.wait_closed()

    async def _read(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        import msgpack

        buffer = bytearray()
        routes: dict[str, str] = {}  # key -> route, checked on this connection
        while True:
            # One message: its tag checked first, then read whole (bounded), delivered.
            unpacker = msgpack.Unpacker(max_buffer_size=MAX_MESSAGE_BYTES)
            unpacker.feed(bytes(buffer))
            tag: str | None = None
            while True:
                if tag is None and buffer:
                    tag = _tag(bytes(buffer[:MAX_TAG_BYTES]))
                    if tag is not None:
                        await self._route(tag, routes)
                if tag is not None:
                    try:
                        unpacker.skip()
                    except msgpack.OutOfData:
                        pass
                    except (ValueError, msgpack.UnpackException) as error:
                        raise _Refused(f"not a Forward message: {error}") from None
                    else:
                        break
                if len(buffer) >= MAX_MESSAGE_BYTES:
                    raise _Refused(f"a Forward message over {MAX_MESSAGE_BYTES} bytes")
                async with asyncio.timeout(self.idle_timeout_s):
                    data = await reader.read(min(READ_BYTES, MAX_MESSAGE_BYTES - len(buffer)))
                if not data:
                    return
                buffer += data
                unpacker.feed(data)
            assert tag is not None
            end = unpacker.tell()
            message = bytes(buffer[:end])
            del buffer[:end]
            del unpacker
            await self._deliver(message, tag, routes[tag.split(".", 1)[0]], writer)

    async def _route(self, tag: str, routes: dict[str, str]) -> None:
        key = tag.split(".", 1)[0]
        if key in routes:
            return
        async with self.state.db.read_sessions() as session:
            route = await gateway_service.route_of_access_key(session=session, key=key)
        if route is None:
            raise _Refused("the tag does not start with an access key of a gateway route")
        routes[key] = route

    async def _deliver(
        self, message: bytes, tag: str, route_id: str, writer: asyncio.StreamWriter
    ) -> None:
        import msgpack

        key, _, rest = tag.partition(".")
        runtime = self.state.pipelines

        async def body() -> bytes:
            return message

        try:
            await accept(
                state=self.state,
                runtime=runtime,
                request=GatewayRequest(
                    gateway_route_id=route_id,
                    authorization=key,
                    signature=None,
                    content_type=FORWARD_MEDIA_TYPE,
                    content_encoding=None,
                    path=ROUTE_ITSELF,
                    query={},
                    headers={TAG_HEADER: rest},
                ),
                read_body=body,
            )
        except ApiError as error:
            raise _Refused(f"refused by the route ({error.status}): {error.message}") from None
        chunk = await runtime.offload(lambda: _chunk(message), work=len(message) // 64)
        if chunk is not None:
            writer.write(msgpack.packb({"ack": chunk}))
            await writer.drain()

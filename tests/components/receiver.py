"""A real HTTP/1.1 receiver for destination tests: ``asyncio.start_server`` on
127.0.0.1, recording each request exactly as it arrived (method, target, headers in
order and case, body), answering from a script of statuses."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

# A protocol-exact receiver's answer: status and body, and its headers when it has any.
Answer = tuple[int, bytes] | tuple[int, bytes, list[tuple[str, str]]]


@dataclass(frozen=True)
class Request:
    method: str
    target: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        found = [value for key, value in self.headers if key.lower() == name.lower()]
        return found[-1] if found else None


class Receiver:
    """``script``: the status of each successive request (the last one repeats);
    ``answer``: the body of every answer; ``respond``: instead of both, the status and
    body of the answer to each request, and headers of its own when it gives a third
    item (a protocol-exact receiver's checks)."""

    def __init__(
        self,
        *,
        script: list[int] | None = None,
        answer: bytes = b"ok",
        respond: Callable[[Request], Answer] | None = None,
    ) -> None:
        self.script = script or [200]
        self.answer = answer
        self.respond = respond
        self.requests: list[Request] = []
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.port = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> Receiver:
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
                first, *lines = head.decode("latin-1").split("\r\n")
                method, target, _version = first.split(" ", 2)
                headers = []
                for line in lines:
                    name, _, value = line.partition(":")
                    if name:
                        headers.append((name, value.strip()))
                length = next(
                    (int(value) for name, value in headers if name.lower() == "content-length"), 0
                )
                body = await reader.readexactly(length)
                status = self.script[min(len(self.requests), len(self.script) - 1)]
                request = Request(method, target, headers, body)
                answer = self.answer
                extra: list[tuple[str, str]] = []
                if self.respond is not None:
                    status, answer, *more = self.respond(request)
                    extra = list(more[0]) if more else []
                self.requests.append(request)
                names = {name.lower() for name, _ in extra}
                if "content-type" not in names:
                    extra.append(("Content-Type", "application/json"))
                fields = "".join(f"{name}: {value}\r\n" for name, value in extra)
                writer.write(
                    f"HTTP/1.1 {status} X\r\nContent-Length: {len(answer)}\r\n{fields}\r\n".encode()
                    + answer
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()

"""Pure ASGI middleware that holds request bodies to their limits while they stream.

Nothing here reads a body: it wraps ``receive``, so the bytes are only pulled when a
handler asks for them, after its credential check. What can be decided from the headers
alone (a declared length over the limit: 413; a non-JSON body on the JSON APIs: 415) is
answered before any handler runs. While a handler reads, every chunk is counted against
the request's limit (413 the moment it is passed, whatever Content-Length said), waited
for at most ``body_timeout_s`` (408) and charged to a byte budget shared by every request
of the worker (503 with ``Retry-After`` when it is spent), released when the response
ends. docs/decisions.md ("The server's edge") lists what is checked before what.
"""

from __future__ import annotations

import asyncio
from typing import NoReturn

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tidegate.api.error_handlers import render
from tidegate.errors import (
    ApiError,
    PayloadTooLarge,
    RequestTimeout,
    ServiceUnavailable,
    UnsupportedMediaType,
)

INGEST_MAX_BYTES = 10 * 1024 * 1024
_BODY_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
_JSON_API_PREFIXES = ("/v1/", "/v2/", "/v3/")
_RETRY_AFTER_S = "1"


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


class BodyBudget:
    """Bytes of request bodies received by one worker and not yet answered.

    Counted as chunks arrive, so a stalled or unauthenticated request holds nothing; a
    handler's ``request.body()`` keeps every chunk until it answers, which is why the
    charge is released only when the response ends."""

    __slots__ = ("capacity", "used")

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.used = 0

    def try_charge(self, size: int) -> bool:
        if self.used + size > self.capacity:
            return False
        self.used += size
        return True

    def release(self, size: int) -> None:
        self.used -= size


class _Refusal(Exception):
    """Raised into the handler's read; the guard answers ``error`` in its place."""

    def __init__(self, error: ApiError) -> None:
        super().__init__(error.message)
        self.error = error


class BodyGuard:
    def __init__(
        self,
        app: ASGIApp,
        *,
        max_body_bytes: int,
        body_timeout_s: float = 30.0,
        max_buffered_bytes: int = 64 * 1024 * 1024,
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.body_timeout_s = body_timeout_s
        self.budget = BodyBudget(max_buffered_bytes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in _BODY_METHODS:
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        limit = (
            INGEST_MAX_BYTES if path.startswith(("/logs/", "/gateway/")) else self.max_body_bytes
        )
        declared: int | None = None
        content_type = ""
        chunked = False
        for name, value in scope["headers"]:
            if name == b"content-length":
                declared = int(value) if value.isdigit() else None
            elif name == b"content-type":
                content_type = value.decode("latin-1")
            elif name == b"transfer-encoding":
                chunked = True
        if declared is not None and declared > limit:
            await _answer(PayloadTooLarge(f"Request body exceeds {limit} bytes"), scope, send)
            return
        if (
            ((declared or 0) > 0 or chunked)
            and path.startswith(_JSON_API_PREFIXES)
            and not _is_json(content_type)
        ):
            await _answer(UnsupportedMediaType(context="headers"), scope, send)
            return
        await _GuardedRequest(self, scope=scope, limit=limit, receive=receive, send=send).run()


class _GuardedRequest:
    """One request's reads and answer, while the handler runs."""

    def __init__(
        self, guard: BodyGuard, *, scope: Scope, limit: int, receive: Receive, send: Send
    ) -> None:
        self.guard = guard
        self.scope = scope
        self.limit = limit
        self.inner_receive = receive
        self.inner_send = send
        self.received = 0
        self.charged = 0
        self.body_complete = False
        self.refusal: ApiError | None = None
        self.response_started = False
        self.disconnected = False

    async def run(self) -> None:
        try:
            await self.guard.app(self.scope, self.receive, self.send)
        except ClientDisconnect:
            # The client hung up while its body was being read: nobody to answer, and
            # nothing went wrong on our side worth a traceback.
            if not self.disconnected:
                raise
        except Exception:
            # The refusal went up through a handler that did not turn it into a response.
            if self.refusal is None or self.response_started:
                raise
            await self._answer_refusal()
        finally:
            self.guard.budget.release(self.charged)

    async def receive(self) -> Message:
        if self.body_complete:
            # Body read: later reads wait for the disconnect (streaming responses), unbounded.
            return await self.inner_receive()
        if self.refusal is not None:
            raise _Refusal(self.refusal)
        timeout = self.guard.body_timeout_s
        try:
            if timeout > 0:
                async with asyncio.timeout(timeout):
                    message = await self.inner_receive()
            else:
                message = await self.inner_receive()
        except TimeoutError:
            # The client stopped sending: close the connection after answering, since
            # the rest of its body may still arrive and would be read as a new request.
            self._refuse(
                RequestTimeout(
                    f"No request body bytes for {timeout:g} seconds",
                    headers={"Connection": "close"},
                )
            )
        if message["type"] != "http.request":
            self.disconnected = message["type"] == "http.disconnect"
            return message
        size = len(message.get("body", b""))
        self.received += size
        if self.received > self.limit:
            self._refuse(PayloadTooLarge(f"Request body exceeds {self.limit} bytes"))
        if size:
            if not self.guard.budget.try_charge(size):
                self._refuse(
                    ServiceUnavailable(
                        "Too many request bodies in flight on this worker",
                        headers={"Retry-After": _RETRY_AFTER_S},
                    )
                )
            self.charged += size
        if not message.get("more_body", False):
            self.body_complete = True
        return message

    def _refuse(self, error: ApiError) -> NoReturn:
        self.refusal = error
        raise _Refusal(error)

    async def send(self, message: Message) -> None:
        if self.refusal is not None:
            # Whatever the handler made of the failed read (FastAPI turns any error while
            # parsing a body into a 400), the answer is the guard's.
            if not self.response_started:
                await self._answer_refusal()
            return
        if message["type"] == "http.response.start":
            self.response_started = True
        await self.inner_send(message)

    async def _answer_refusal(self) -> None:
        assert self.refusal is not None
        self.response_started = True
        await _answer(self.refusal, self.scope, self.inner_send)


async def _answer(error: ApiError, scope: Scope, send: Send) -> None:
    response = render(error, scope["path"])
    await response(scope, _no_receive, send)


async def _no_receive() -> Message:  # pragma: no cover - a plain Response never reads
    return {"type": "http.disconnect"}

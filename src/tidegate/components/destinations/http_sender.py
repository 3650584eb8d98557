"""The ``http`` destination's sender: POSTs events in batches to the configured ``uri``.

A batch holds at most ``batch.max_events`` events and ``batch.max_bytes`` bytes of
encoded events (an event larger than ``max_bytes`` travels alone). ``encoding`` is
``json`` (one array per batch, ``application/json``) or ``ndjson`` (one event per line,
``application/x-ndjson``). A batch is acknowledged by any 2xx answer. Connection
errors, timeouts, 408, 425, 429 and 5xx are retried up to ``max_retries`` times with
exponential backoff and jitter (a ``Retry-After`` of the destination is honoured), each
attempt bounded by ``timeout_ms`` and everything by the request's delivery deadline;
other answers (3xx, 4xx) fail at once. At most ``http_concurrency`` POSTs per
destination are in flight per worker. ``batch.timeout_ms`` is not used: the gateway
never holds events back to fill a batch, because its 200 means "delivered".

Only the status and headers of an answer matter: at most ``MAX_RESPONSE_BYTES`` of its
body are read (undecoded, so a compressed body cannot inflate), then the connection is
dropped, so a destination answering with an endless body cannot hold a worker or its
memory. A destination whose host is not a public address (``destination_guard``) fails
at once, without retries.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Final

import httpx
import orjson

from tidegate.components.base import DeliveryFailed, Offload
from tidegate.runtime.destination_guard import DestinationRefused

if TYPE_CHECKING:
    from tidegate.components.destinations.http import HttpDestinationConfig

log = logging.getLogger("tidegate.runtime.http")

__all__ = ["MAX_RESPONSE_BYTES", "DeliveryFailed", "HttpDestination", "encode_batches"]

_RETRY_STATUSES: Final = frozenset({408, 425, 429})
MAX_RESPONSE_BYTES: Final = 64 * 1024
_MAX_RETRY_AFTER_S: Final = 60.0


def encode_batches(events: Sequence[Any], config: HttpDestinationConfig) -> Iterator[bytes]:
    """The request bodies for ``events``, split per the batch limits."""
    ndjson = config.encoding == "ndjson"
    max_events, max_bytes = config.batch.max_events, config.batch.max_bytes
    parts: list[bytes] = []
    size = 0
    for event in events:
        encoded = orjson.dumps(event)
        if parts and (len(parts) >= max_events or size + len(encoded) + 1 > max_bytes):
            yield _body(parts, ndjson)
            parts, size = [], 0
        parts.append(encoded)
        size += len(encoded) + 1
    if parts:
        yield _body(parts, ndjson)


def _encoded(events: Sequence[Any], config: HttpDestinationConfig) -> list[bytes]:
    return list(encode_batches(events, config))


def _body(parts: list[bytes], ndjson: bool) -> bytes:
    if ndjson:
        return b"\n".join(parts) + b"\n"
    return b"[" + b",".join(parts) + b"]"


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after", "").strip()
    if value.isdigit():
        return min(float(value), _MAX_RETRY_AFTER_S)
    return None


class HttpDestination:
    def __init__(
        self,
        config: HttpDestinationConfig,
        *,
        client: httpx.AsyncClient,
        concurrency: int,
        backoff_base_ms: int,
        backoff_cap_ms: int,
        name: str,
    ) -> None:
        self.config = config
        self.name = name
        self._client = client
        self._slots = asyncio.Semaphore(concurrency)
        self._base = backoff_base_ms / 1000
        self._cap = backoff_cap_ms / 1000
        self._uri = str(config.uri)
        content_type = "application/x-ndjson" if config.encoding == "ndjson" else "application/json"
        self._headers = {"Content-Type": content_type, **config.headers}

    def backoff(self, attempt: int) -> float:
        """Seconds before retry ``attempt`` (0-based): exponential, capped, half jitter."""
        ceiling: float = min(self._cap, self._base * 2.0**attempt)
        return ceiling / 2 + random.uniform(0, ceiling / 2)

    async def send(
        self, events: Sequence[Any], *, deadline: float, offload: Offload | None = None
    ) -> None:
        """Deliver every event or raise ``DeliveryFailed``; ``deadline`` is loop time.
        With ``offload``, a large batch is encoded in a worker thread."""
        if offload is None:
            bodies = list(encode_batches(events, self.config))
        else:
            bodies = await offload(partial(_encoded, events, self.config), work=len(events))
        if len(bodies) == 1:
            await self._send_batch(bodies[0], deadline)
            return
        results = await asyncio.gather(
            *(self._send_batch(body, deadline) for body in bodies), return_exceptions=True
        )
        for result in results:
            if isinstance(result, BaseException):
                raise result

    async def _send_batch(self, body: bytes, deadline: float) -> None:
        loop = asyncio.get_running_loop()
        attempt = 0
        while True:
            wait: float | None = None
            try:
                async with self._slots:
                    remaining = deadline - loop.time()
                    if remaining <= 0:
                        raise DeliveryFailed(f"{self.name}: delivery deadline passed")
                    timeout = min(self.config.timeout_ms / 1000, remaining)
                    response = await self._post(body, timeout)
                status = response.status_code
                if 200 <= status < 300:
                    return
                reason = f"answered HTTP {status}"
                retryable = status in _RETRY_STATUSES or status >= 500
                wait = _retry_after(response)
            except DestinationRefused as error:
                raise DeliveryFailed(f"{self.name}: {error}") from None
            except httpx.HTTPError as error:
                reason = f"{type(error).__name__}: {error}".rstrip(": ")
                retryable = isinstance(error, httpx.TransportError)
            if not retryable or attempt >= self.config.max_retries:
                raise DeliveryFailed(f"{self.name}: {reason} (attempt {attempt + 1})")
            delay = max(self.backoff(attempt), wait or 0.0)
            if loop.time() + delay >= deadline:
                raise DeliveryFailed(f"{self.name}: {reason}; no time left to retry")
            log.info("%s: %s; retry %s in %.2fs", self.name, reason, attempt + 1, delay)
            await asyncio.sleep(delay)
            attempt += 1

    async def _post(self, body: bytes, timeout: float) -> httpx.Response:
        """POST ``body``; the answer's status and headers, its body read no further than
        ``MAX_RESPONSE_BYTES`` (a longer one closes the connection unread)."""
        request = self._client.build_request(
            "POST", self._uri, content=body, headers=self._headers, timeout=timeout
        )
        response = await self._client.send(request, stream=True)
        try:
            read = 0
            async for chunk in response.aiter_raw():
                read += len(chunk)
                if read > MAX_RESPONSE_BYTES:
                    break
        finally:
            await response.aclose()
        return response

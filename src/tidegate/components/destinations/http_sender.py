"""Sends a destination's ``WireRequest``s: retries with backoff, a bounded answer read,
at most ``concurrency`` requests in flight per destination and worker.

A request is acknowledged by a 2xx answer that ``accepted`` (the destination's check
of the answer's first bytes, e.g. Elasticsearch's ``"errors":true``) agrees with.
Connection errors, timeouts, 408, 425, 429 and 5xx (and a 2xx ``accepted`` refuses)
are retried up to ``max_retries`` times with exponential backoff and jitter (the
destination's ``Retry-After`` is honoured, up to 60 s), each attempt bounded by
``timeout_s`` and everything by the request's delivery deadline; other answers fail at
once. Only ``MAX_RESPONSE_BYTES`` of an answer are read (``response_bytes`` when
given; undecoded, so a compressed answer cannot inflate), then the connection is
dropped: a destination answering with an endless body cannot hold a worker or its
memory. A destination whose host is not a
public address (``kit.destination_guard``) fails at once, without retries.

``rotate`` (Elasticsearch's several endpoints) is asked for the request to send on
each retry, so a retry can go to another endpoint.

``settle`` (Elasticsearch's bulk API) reads a 2xx answer item by item: ``Unsettled``
names the request carrying only the items to send again (its body; the URL and headers
stay the retry's) and the items refused for good. Those are not sent again; once
nothing is left to retry, they fail the request (``DeliveryFailed``, as any refusal).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

import httpx

from tidegate.components.destinations.wire import WireRequest
from tidegate.delivery import DeliveryFailed
from tidegate.kit.destination_guard import DestinationRefused

log = logging.getLogger("tidegate.runtime.http")

__all__ = ["MAX_RESPONSE_BYTES", "OutboundSender", "Settle", "Unsettled"]

_RETRY_STATUSES: Final = frozenset({408, 425, 429})
MAX_RESPONSE_BYTES: Final = 64 * 1024
_MAX_RETRY_AFTER_S: Final = 60.0


def _always(_head: bytes) -> bool:
    return True


@dataclass(frozen=True, slots=True)
class Unsettled:
    """What a 2xx answer left undone: ``retry_body`` carries the items to send again
    (None: none), ``refused`` items were refused for good, the first for ``reason``."""

    retry_body: bytes | None
    retry_items: int = 0
    refused: int = 0
    reason: str = ""


Settle = Callable[[WireRequest, bytes], Unsettled | None]
"""``(request, answer)`` -> None when every item was taken, else what is left."""


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after", "").strip()
    if value.isdigit():
        return min(float(value), _MAX_RETRY_AFTER_S)
    return None


class OutboundSender:
    def __init__(
        self,
        *,
        client: httpx.AsyncClient,
        name: str,
        concurrency: int,
        timeout_s: float,
        max_retries: int,
        backoff_base_ms: int,
        backoff_cap_ms: int,
        accepted: Callable[[bytes], bool] = _always,
        settle: Settle | None = None,
        response_bytes: int = MAX_RESPONSE_BYTES,
    ) -> None:
        self.name = name
        self._client = client
        self._slots = asyncio.Semaphore(max(1, concurrency))
        self._timeout_s = timeout_s
        self._max_retries = max_retries
        self._base = backoff_base_ms / 1000
        self._cap = backoff_cap_ms / 1000
        self._accepted = accepted
        self._settle = settle
        self._response_bytes = response_bytes

    def backoff(self, attempt: int) -> float:
        """Seconds before retry ``attempt`` (0-based): exponential, capped, half jitter."""
        ceiling: float = min(self._cap, self._base * 2.0**attempt)
        return ceiling / 2 + random.uniform(0, ceiling / 2)

    async def send_all(
        self,
        requests: Sequence[WireRequest],
        *,
        deadline: float,
        rotate: Callable[[int, int], WireRequest] | None = None,
    ) -> None:
        """Send every request (concurrently) or raise ``DeliveryFailed``."""
        if len(requests) == 1:
            await self.send_request(requests[0], deadline=deadline, retry_as=_bind(rotate, 0))
            return
        results = await asyncio.gather(
            *(
                self.send_request(request, deadline=deadline, retry_as=_bind(rotate, index))
                for index, request in enumerate(requests)
            ),
            return_exceptions=True,
        )
        for result in results:
            if isinstance(result, BaseException):
                raise result

    async def send_request(
        self,
        request: WireRequest,
        *,
        deadline: float,
        retry_as: Callable[[int], WireRequest] | None = None,
    ) -> bytes:
        """Send ``request`` until it is acknowledged (then its answer's first bytes) or
        ``DeliveryFailed``."""
        loop = asyncio.get_running_loop()
        attempt = 0
        partial: bytes | None = None
        """The body of the items left to send again (``settle``), else None: all."""
        refused = 0
        refusal = ""
        while True:
            wait: float | None = None
            try:
                async with self._slots:
                    remaining = deadline - loop.time()
                    if remaining <= 0:
                        raise DeliveryFailed(f"{self.name}: delivery deadline passed")
                    status, head, wait = await self._exchange(
                        request, min(self._timeout_s, remaining)
                    )
                left = None
                if 200 <= status < 300 and self._settle is not None:
                    left = self._settle(request, head)
                    if left is not None:
                        refused += left.refused
                        refusal = refusal or left.reason
                        partial = left.retry_body
                    if left is None or left.retry_body is None:
                        if refused:
                            raise DeliveryFailed(
                                f"{self.name}: {refused} item(s) refused, not sent again: {refusal}"
                            )
                        return head
                    reason = f"answered HTTP {status}; {left.retry_items} item(s) to send again"
                    retryable = True
                elif 200 <= status < 300 and self._accepted(head):
                    return head
                elif 200 <= status < 300:
                    reason, retryable = f"answered HTTP {status} refusing some events", True
                else:
                    reason = f"answered HTTP {status}"
                    retryable = status in _RETRY_STATUSES or status >= 500
            except DestinationRefused as error:
                raise DeliveryFailed(f"{self.name}: {error}") from None
            except httpx.HTTPError as error:
                reason = f"{type(error).__name__}: {error}".rstrip(": ")
                retryable = isinstance(error, httpx.TransportError)
            if refused:
                reason += f"; {refused} item(s) refused, not sent again: {refusal}"
            if not retryable or attempt >= self._max_retries:
                raise DeliveryFailed(f"{self.name}: {reason} (attempt {attempt + 1})")
            delay = max(self.backoff(attempt), wait or 0.0)
            if loop.time() + delay >= deadline:
                raise DeliveryFailed(f"{self.name}: {reason}; no time left to retry")
            log.info("%s: %s; retry %s in %.2fs", self.name, reason, attempt + 1, delay)
            await asyncio.sleep(delay)
            attempt += 1
            if retry_as is not None:
                request = retry_as(attempt)
            if partial is not None:
                request = dataclasses.replace(request, body=partial)

    async def _exchange(
        self, request: WireRequest, timeout: float
    ) -> tuple[int, bytes, float | None]:
        """The answer's status, first bytes (at most ``MAX_RESPONSE_BYTES``, a longer
        body closes the connection unread) and ``Retry-After``."""
        built = self._client.build_request(
            request.method,
            request.url,
            content=request.body,
            headers=list(request.headers),
            timeout=timeout,
        )
        response = await self._client.send(built, stream=True)
        head = bytearray()
        try:
            async for chunk in response.aiter_raw():
                head += chunk
                if len(head) > self._response_bytes:
                    break
        finally:
            await response.aclose()
        return response.status_code, bytes(head[: self._response_bytes]), _retry_after(response)


def _bind(
    rotate: Callable[[int, int], WireRequest] | None, index: int
) -> Callable[[int], WireRequest] | None:
    if rotate is None:
        return None
    return lambda attempt: rotate(index, attempt)

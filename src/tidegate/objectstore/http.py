"""Requests to an object storage REST API (S3's, Azure Blob's), signed by the API's own
rules and sent through the caller's ``httpx.AsyncClient`` (the destination guard's:
every connection is vetted, docs/runtime.md), with retries and backoff.

``StoreClient`` is the part the APIs share: connection errors, timeouts, 408, 425, 429
and 5xx are retried up to ``max_retries`` times with exponential backoff and jitter,
each attempt signed anew (a fresh date) and bounded by ``timeout_s``; answers are read
up to ``answer_bytes`` (an endless answer cannot hold the worker or its memory), a
refusal reported with the ``<Code>`` of the XML error both APIs answer with. A
subclass signs (``sign``), places (``url``) and names (``describe``) what it writes.
"""

from __future__ import annotations

import asyncio
import logging
import random
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import BinaryIO, ClassVar, Final

import httpx

__all__ = ["MAX_ANSWER_BYTES", "Answer", "StoreClient", "StoreFailed", "error_code"]

log = logging.getLogger("tidegate.objectstore")

MAX_ANSWER_BYTES: Final = 64 * 1024
_RETRY_STATUSES: Final = frozenset({408, 425, 429})
_ERROR_CODE: Final = re.compile(r"<Code>([^<]{1,128})</Code>")


class StoreFailed(Exception):
    """A request the API refused or that could not be sent (after the retries);
    ``status`` is the refusal's HTTP status (None: nothing was answered)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    head: bytes
    etag: str | None
    location: str | None = None
    headers: tuple[tuple[str, str], ...] = ()


def error_code(head: bytes) -> str:
    """`` (<Code>)`` of an XML error answer, or nothing."""
    found = _ERROR_CODE.search(head.decode("utf-8", "replace"))
    return f" ({found.group(1)})" if found else ""


class StoreClient:
    """Signed requests with retries (the module's rules)."""

    failure: ClassVar[type[StoreFailed]] = StoreFailed
    service: ClassVar[str] = "object storage"

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        timeout_s: float = 60.0,
        max_retries: int = 4,
        backoff_base_s: float = 0.5,
        backoff_cap_s: float = 30.0,
    ) -> None:
        self.client = client
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_base_s = backoff_base_s
        self.backoff_cap_s = backoff_cap_s

    def backoff(self, attempt: int) -> float:
        ceiling: float = min(self.backoff_cap_s, self.backoff_base_s * 2.0**attempt)
        return ceiling / 2 + random.uniform(0, ceiling / 2)

    async def sign(
        self, method: str, url: str, body: bytes, headers: Sequence[tuple[str, str]]
    ) -> Sequence[tuple[str, str]]:
        """The request's headers, signed (called for every attempt)."""
        raise NotImplementedError

    def describe(self, key: str) -> str:
        return key

    def url(self, key: str, query: str) -> str:
        """The URL of ``key`` (an object, a blob; the bucket or container when empty)
        with ``query``."""
        raise NotImplementedError

    def explain(self, head: bytes) -> str:
        """What a refusal's body says (the XML ``<Code>`` both S3 and Azure send)."""
        return error_code(head)

    async def renew(self, status: int) -> bool:
        """Called once per request that the API refused with ``status`` (not retried):
        True sends it once more (a subclass took a new credential, e.g. a new token
        after a 401)."""
        return False

    async def send(
        self,
        method: str,
        key: str,
        *,
        query: str = "",
        body: bytes = b"",
        headers: Sequence[tuple[str, str]] = (),
        into: BinaryIO | None = None,
        answer_bytes: int = MAX_ANSWER_BYTES,
    ) -> Answer:
        """The request's 2xx answer, retried as the module says; ``failure`` otherwise.
        With ``into``, a 2xx answer's body is written there (from its start on each
        attempt), in the calling thread: pass a file only from a loop of a thread of its
        own, never the app's."""
        url = self.url(key, query)
        return await self.request(
            method, url, key, body=body, headers=headers, into=into, answer_bytes=answer_bytes
        )

    async def request(
        self,
        method: str,
        url: str,
        key: str,
        *,
        body: bytes = b"",
        headers: Sequence[tuple[str, str]] = (),
        into: BinaryIO | None = None,
        answer_bytes: int = MAX_ANSWER_BYTES,
        accept: Collection[int] = (),
    ) -> Answer:
        """``send`` to a URL given whole (``key`` names it in errors); an answer whose
        status is in ``accept`` is taken as well as a 2xx."""
        attempt = 0
        renewed = False
        while True:
            status = None
            try:
                answer = await self._exchange(method, url, body, headers, into, answer_bytes)
                if 200 <= answer.status < 300 or answer.status in accept:
                    return answer
                status = answer.status
                reason = f"answered HTTP {answer.status}{self.explain(answer.head)}"
                retryable = answer.status in _RETRY_STATUSES or answer.status >= 500
                if not retryable and not renewed and await self.renew(status):
                    renewed = True
                    continue
            except httpx.TransportError as error:
                reason, retryable = f"{type(error).__name__}: {error}".rstrip(": "), True
            if not retryable or attempt >= self.max_retries:
                raise self.failure(f"{method} {self.describe(key)}: {reason}", status=status)
            delay = self.backoff(attempt)
            log.info("%s %s %s: %s; retry in %.2fs", self.service, method, key, reason, delay)
            await asyncio.sleep(delay)
            attempt += 1

    async def _exchange(
        self,
        method: str,
        url: str,
        body: bytes,
        headers: Sequence[tuple[str, str]],
        into: BinaryIO | None,
        answer_bytes: int,
    ) -> Answer:
        signed = await self.sign(method, url, body, headers)
        request = self.client.build_request(
            method, url, content=body, headers=list(signed), timeout=self.timeout_s
        )
        response = await self.client.send(request, stream=True)
        head = bytearray()
        try:
            if into is not None and 200 <= response.status_code < 300:
                into.seek(0)
                into.truncate()
                async for chunk in response.aiter_raw():
                    into.write(chunk)
            else:
                async for chunk in response.aiter_raw():
                    head += chunk
                    if len(head) > answer_bytes:
                        break
        finally:
            await response.aclose()
        return Answer(
            response.status_code,
            bytes(head[:answer_bytes]),
            response.headers.get("etag"),
            response.headers.get("location"),
            tuple(response.headers.items()),
        )

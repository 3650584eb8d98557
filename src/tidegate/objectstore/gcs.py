"""Google Cloud Storage's JSON API: objects written by a resumable upload
(https://cloud.google.com/storage/docs/performing-resumable-uploads), with an OAuth
access token, sent with the retries of ``tidegate.objectstore.http``.

``ResumableUpload``: ``start`` opens a session (``POST
<endpoint>/upload/storage/v1/b/<bucket>/o?uploadType=resumable&name=<key>``, the
object's metadata as JSON; the session's URI comes back in ``Location``), ``part``
sends the bytes gathered in chunks of a multiple of 256 KiB (GCS's rule for every chunk
but the last), each a ``PUT`` of ``Content-Range: bytes <first>-<last>/*`` answered
``308 Resume Incomplete``; ``complete`` sends the rest with the total
(``bytes <first>-<last>/<total>``, or ``bytes */<total>`` when nothing is left), and
the object exists only then, whole. ``abort`` cancels the session (``DELETE``, GCS
answers 499). A writer holds the chunk it sends and less than 256 KiB beside it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote, urlsplit

import httpx

from tidegate import json_codec
from tidegate.objectstore.http import StoreClient, StoreFailed

__all__ = [
    "CHUNK_QUANTUM",
    "GCS_ENDPOINT",
    "GcsClient",
    "GcsFailed",
    "GcsTarget",
    "ResumableUpload",
]

log = logging.getLogger("tidegate.objectstore")

GCS_ENDPOINT: Final = "https://storage.googleapis.com"
CHUNK_QUANTUM: Final = 256 * 1024  # every chunk but the last is a multiple of this
_RESUME_INCOMPLETE: Final = 308
_CANCELLED: Final = 499
_MAX_MESSAGE: Final = 300


class GcsFailed(StoreFailed):
    """A request GCS refused or that could not be sent (after the retries)."""


@dataclass(frozen=True, slots=True)
class GcsTarget:
    """The JSON API's endpoint (scheme and host), the bucket and an access token."""

    endpoint: str
    bucket: str
    token: str


class GcsClient(StoreClient):
    failure = GcsFailed
    service = "GCS"

    def __init__(self, client: httpx.AsyncClient, target: GcsTarget, **options: Any) -> None:
        super().__init__(client, **options)
        self.target = target

    def url(self, key: str, query: str) -> str:
        """The upload URL of ``key`` (``query`` added)."""
        bucket = quote(self.target.bucket, safe="")
        url = f"{self.target.endpoint.rstrip('/')}/upload/storage/v1/b/{bucket}/o"
        return f"{url}?{query}" if query else url

    async def sign(self, method: str, url: str, body: bytes, headers: Any) -> list[tuple[str, str]]:
        return [*headers, ("Authorization", f"Bearer {self.target.token}")]

    def describe(self, key: str) -> str:
        return f"gs://{self.target.bucket}/{key}"

    def explain(self, head: bytes) -> str:
        """GCS's JSON error's ``message``."""
        try:
            message = json_codec.loads(head)["error"]["message"]
        except (ValueError, KeyError, TypeError):
            return ""
        return f" ({str(message)[:_MAX_MESSAGE]})" if message else ""


class ResumableUpload:
    """One object written chunk by chunk in a resumable upload session (the module's
    rules)."""

    def __init__(self, gcs: GcsClient, key: str) -> None:
        self.gcs = gcs
        self.key = key
        self.session: str | None = None
        self.sent = 0
        self.chunks = 0
        self._pending = bytearray()

    @property
    def started(self) -> bool:
        return self.session is not None

    async def start(self, *, content_type: str, content_encoding: str | None = None) -> None:
        metadata = {"name": self.key, "contentType": content_type}
        if content_encoding:
            metadata["contentEncoding"] = content_encoding
        answer = await self.gcs.send(
            "POST",
            self.key,
            query=f"uploadType=resumable&name={quote(self.key, safe='')}",
            body=json_codec.dumps(metadata),
            headers=[
                ("Content-Type", "application/json; charset=UTF-8"),
                ("X-Upload-Content-Type", content_type),
            ],
        )
        session = answer.location or ""
        # The session is at the API's own origin: a Location elsewhere is not followed.
        if _origin(session) != _origin(self.gcs.target.endpoint):
            raise GcsFailed(f"POST {self.gcs.describe(self.key)}: no session URI at the endpoint")
        self.session = session

    async def part(self, data: bytes) -> None:
        self._pending += data
        size = len(self._pending) // CHUNK_QUANTUM * CHUNK_QUANTUM
        if size:
            chunk = bytes(self._pending[:size])
            del self._pending[:size]
            await self._put(chunk, total=None)

    async def complete(self) -> None:
        chunk = bytes(self._pending)
        self._pending.clear()
        await self._put(chunk, total=self.sent + len(chunk))

    async def _put(self, chunk: bytes, *, total: int | None) -> None:
        assert self.session is not None
        if chunk:
            span = (
                f"bytes {self.sent}-{self.sent + len(chunk) - 1}/{'*' if total is None else total}"
            )
        else:
            span = f"bytes */{total}"
        await self.gcs.request(
            "PUT",
            self.session,
            self.key,
            body=chunk,
            headers=[("Content-Range", span)],
            accept=(_RESUME_INCOMPLETE,) if total is None else (),
        )
        self.sent += len(chunk)
        self.chunks += 1

    async def abort(self) -> None:
        if self.session is None:
            return
        try:
            await self.gcs.request("DELETE", self.session, self.key, accept=(_CANCELLED,))
        except (GcsFailed, httpx.HTTPError) as error:
            log.warning("could not cancel the upload of %s: %s", self.gcs.describe(self.key), error)


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme, parts.netloc

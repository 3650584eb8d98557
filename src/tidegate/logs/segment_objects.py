"""Segments in an S3-compatible bucket (docs/log-store.md, "Segments in object storage").

With ``segment_s3_bucket`` set, the bucket is where segments live: the compactor uploads
each new segment's file before the transaction that registers it commits, retention
deletes the objects of the segments it dropped (after their rows), and the compactor's
orphan sweep deletes the objects no registry row names. Every host reads them, through
copies in its own cache directory (``tidegate.logs.segment_cache``).

A segment's object is ``<prefix>/<name>``, ``name`` being its registry path
(``<account_id>/<window>-<first id>-<token>.parquet``). The requests are the project's
S3 client's (``tidegate.objectstore.s3``: SigV4, retries, bounded answers), on a client
of their own: the bucket is the operator's, not a tenant's choice, so it is not sent
through the destination guard (allowing a private MinIO there would open it to every
tenant's pipeline destinations too).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import httpx

from tidegate.config import Settings
from tidegate.kit.destination_guard import tls_context
from tidegate.objectstore.s3 import (
    AmbientCredentials,
    S3Client,
    S3Target,
    abort_upload,
    aws_endpoint,
    delete_object,
    list_keys,
    list_uploads,
    upload_file,
)

CONTENT_TYPE: Final = "application/vnd.apache.parquet"
# A segment up to this size goes up in one request; a larger one in parts of it.
PART_BYTES: Final = 16 * 1024 * 1024
# A key the sweep may delete: a segment's name under the prefix, nothing else.
_SEGMENT_NAME: Final = re.compile(
    r"[A-Za-z0-9_-]{1,64}/[0-9]{1,20}-[0-9]{1,20}(-[0-9a-f]{1,64})?\.parquet"
)


@dataclass(frozen=True, slots=True)
class SegmentBucket:
    """Where a segment bucket is and what its keys look like."""

    target: S3Target
    prefix: str  # "" or a folder ending with "/"

    @classmethod
    def of(cls, settings: Settings) -> SegmentBucket | None:
        if not settings.segment_s3_bucket:
            return None
        region = settings.segment_s3_region
        folder = settings.segment_s3_prefix.strip("/")
        keys = settings.segment_s3_access_key_id, settings.segment_s3_secret_access_key
        return cls(
            S3Target(
                settings.segment_s3_endpoint or aws_endpoint(region),
                settings.segment_s3_bucket,
                region,
                *keys,
                # No keys: the AWS default credential chain (the operator's bucket).
                ambient=None if all(keys) else AmbientCredentials(),
            ),
            f"{folder}/" if folder else "",
        )

    def key(self, name: str) -> str:
        return self.prefix + name

    def name(self, key: str) -> str | None:
        """The segment name the key stands for; None for a key that is not a segment's."""
        if not key.startswith(self.prefix):
            return None
        name = key[len(self.prefix) :]
        return name if _SEGMENT_NAME.fullmatch(name) else None

    def client(self, http: httpx.AsyncClient) -> S3Client:
        return S3Client(http, self.target)


def http_client() -> httpx.AsyncClient:
    return httpx.AsyncClient(
        verify=tls_context(),
        trust_env=False,
        follow_redirects=False,
        limits=httpx.Limits(max_connections=8, max_keepalive_connections=2),
        headers={"User-Agent": "tidegate-segments"},
    )


class SegmentObjects:
    """The writing side of a segment bucket (the compactor, retention), on the app's
    loop. Close it at shutdown."""

    def __init__(self, bucket: SegmentBucket) -> None:
        self.bucket = bucket
        self._http = http_client()
        self.s3 = bucket.client(self._http)

    async def upload(self, name: str, path: Path) -> None:
        """The segment's file as its object (read in parts in a worker thread)."""
        await upload_file(
            self.s3, self.bucket.key(name), path, content_type=CONTENT_TYPE, part_bytes=PART_BYTES
        )

    async def delete(self, name: str) -> None:
        await delete_object(self.s3, self.bucket.key(name))

    async def names(self) -> list[str]:
        """The names of the segments the bucket holds (registered or not)."""
        keys = await list_keys(self.s3, self.bucket.prefix)
        return [name for name in map(self.bucket.name, keys) if name is not None]

    async def abort_uploads(self) -> int:
        """Aborts the multipart uploads of segment objects left in progress (a process
        that crashed while uploading a large segment: its parts are stored, and billed,
        until aborted); how many. Only the lease holder uploads, so at the start of its
        round none is its own."""
        aborted = 0
        for key, upload_id in await list_uploads(self.s3, self.bucket.prefix):
            if self.bucket.name(key) is not None:
                await abort_upload(self.s3, key, upload_id)
                aborted += 1
        return aborted

    async def close(self) -> None:
        await self._http.aclose()

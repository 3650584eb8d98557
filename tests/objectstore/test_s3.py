"""The S3 writer (tidegate.objectstore.s3) against moto in server mode: objects and
multipart uploads read back byte for byte, a refused request reported, and the
destination guard in the way of a loopback endpoint nobody allowed."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
from tests.objectstore.moto_server import (
    ACCESS_KEY_ID,
    REGION,
    SECRET_ACCESS_KEY,
    MotoServer,
    moto_server,  # noqa: F401  (the session's server)
)

from tidegate.kit.destination_guard import (
    DestinationPolicy,
    DestinationRefused,
    GuardedTransport,
    policy_from_setting,
)
from tidegate.objectstore.s3 import (
    MIN_PART_BYTES,
    MultipartUpload,
    S3Client,
    S3Failed,
    S3Target,
    put_object,
)


def _guarded(allow: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=GuardedTransport(policy_from_setting(allow), limits=httpx.Limits()),
        trust_env=False,
    )


@pytest.fixture
async def bucket(moto_server: MotoServer) -> str:  # noqa: F811
    return await asyncio.to_thread(moto_server.make_bucket, f"b-{uuid.uuid4().hex[:12]}")


@pytest.fixture
async def s3(moto_server: MotoServer, bucket: str) -> AsyncIterator[S3Client]:  # noqa: F811
    target = S3Target(moto_server.endpoint, bucket, REGION, ACCESS_KEY_ID, SECRET_ACCESS_KEY)
    async with _guarded("127.0.0.1") as client:
        yield S3Client(client, target, backoff_base_s=0.01)


async def test_put_object_reads_back_byte_for_byte(
    s3: S3Client,
    moto_server: MotoServer,  # noqa: F811
    bucket: str,
) -> None:
    body = b'{"a":1}\n{"b":"\xc3\xa9"}\n'
    await put_object(
        s3, "p/x y.ndjson", body, content_type="application/x-ndjson", content_encoding=None
    )
    stored, meta = await asyncio.to_thread(moto_server.read, bucket, "p/x y.ndjson")
    assert stored == body
    assert meta["ContentType"] == "application/x-ndjson"


async def test_multipart_upload_of_several_parts(
    s3: S3Client,
    moto_server: MotoServer,  # noqa: F811
    bucket: str,
) -> None:
    parts = [os.urandom(MIN_PART_BYTES), os.urandom(MIN_PART_BYTES), b"the last, short"]
    upload = MultipartUpload(s3, "acct/2026/11/26/day.json.gz")
    await upload.start(content_type="application/x-ndjson", content_encoding="gzip")
    for part in parts:
        await upload.part(part)
    await upload.complete()
    stored, meta = await asyncio.to_thread(moto_server.read, bucket, upload.key)
    assert stored == b"".join(parts)
    assert meta["ContentEncoding"] == "gzip"


async def test_a_missing_bucket_is_reported_not_retried_forever(
    moto_server: MotoServer,  # noqa: F811
) -> None:
    target = S3Target(moto_server.endpoint, "no-such-bucket-x", REGION, "k", "s")
    async with _guarded("127.0.0.1") as client:
        with pytest.raises(S3Failed, match="NoSuchBucket"):
            await put_object(
                S3Client(client, target),
                "k",
                b"x",
                content_type="text/plain",
                content_encoding=None,
            )


async def test_the_guard_refuses_a_loopback_endpoint_nobody_allowed(
    moto_server: MotoServer,  # noqa: F811
    bucket: str,
) -> None:
    target = S3Target(moto_server.endpoint, bucket, REGION, "k", "s")
    async with _guarded("") as client:
        with pytest.raises(DestinationRefused):
            await put_object(
                S3Client(client, target),
                "k",
                b"x",
                content_type="text/plain",
                content_encoding=None,
            )
    assert not await asyncio.to_thread(moto_server.keys, bucket)
    assert DestinationPolicy().host_allowed("127.0.0.1") is False

"""The ``s3`` source: objects written to an S3 bucket, announced by the bucket's event
notifications on an SQS queue (``sqs_queue_url``, ``region``, ``auth``, ``compression``
auto (default) | gzip | zstd | none: the provider's fields).

Each poll (``runtime/pull_sources.py``) receives up to 10 messages of the queue; every
``ObjectCreated:*`` record names an object, which is read (``GET``, signed with AWS
Signature V4, from ``TIDEGATE_S3_ENDPOINT`` or AWS's endpoint of the record's region,
through the destination guard), inflated and split into lines: each non-empty line is
one event ``{"message": <line>, "bucket": ..., "object": <key>}``. The messages are
deleted once every destination took the events; S3's ``s3:TestEvent`` and records of
other events are deleted without reading anything.

``auto`` reads gzip and zstd by their magic bytes, anything else as text. Bounds: an
object of more than ``MAX_OBJECT_BYTES`` as stored or inflated, or more than
``MAX_EVENTS`` lines in one poll, fails the poll: nothing is deleted (the queue's
redrive policy decides what becomes of the message), and it is logged.
"""

from __future__ import annotations

import json
from typing import Any, Final, Literal
from urllib.parse import unquote_plus

import httpx
from pydantic import BaseModel, ConfigDict, Field

from tidegate.components.base import BuildContext, Component, NodeRef
from tidegate.components.sources.pull import PullContext, Pulled
from tidegate.components.sources.sqs import (
    Queue,
    SqsAuth,
    SqsFailed,
    deleter,
    receive_messages,
)
from tidegate.kit.body import MAX_EVENTS
from tidegate.objectstore.s3 import S3Target, aws_endpoint, signed_headers

__all__ = ["COMPONENT", "MAX_OBJECT_BYTES", "S3SourceConfig", "object_lines"]

MAX_OBJECT_BYTES: Final = 32 * 1024 * 1024
_GZIP: Final = b"\x1f\x8b"
_ZSTD: Final = b"\x28\xb5\x2f\xfd"


class S3SourceConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    auth: SqsAuth
    region: str = Field(min_length=1, max_length=64, pattern=r"^[a-z0-9-]+$")
    sqs_queue_url: str = Field(min_length=7, max_length=2048)
    compression: Literal["auto", "gzip", "zstd", "none"] = "auto"


def _inflate(data: bytes, compression: str) -> bytes:
    import cramjam

    if compression == "auto":
        compression = "gzip" if data[:2] == _GZIP else "zstd" if data[:4] == _ZSTD else "none"
    if compression == "none":
        return data
    codec = cramjam.gzip if compression == "gzip" else cramjam.zstd
    # A buffer that fits most objects first; the bound only for those it does not.
    for room in sorted({min(MAX_OBJECT_BYTES, max(1 << 20, 16 * len(data))), MAX_OBJECT_BYTES}):
        out = bytearray(room)
        try:
            size = codec.decompress_into(data, out)
        except cramjam.DecompressionError as error:
            failure = error
            continue
        return bytes(out[:size])
    raise SqsFailed(f"not {compression}, or over {MAX_OBJECT_BYTES} bytes inflated: {failure}")


def object_lines(data: bytes, compression: str) -> list[str]:
    """The non-empty lines of an object as stored (CPU work)."""
    text = _inflate(data, compression).decode("utf-8", "replace").replace("\x00", "\ufffd")
    return [line.rstrip("\r") for line in text.split("\n") if line.strip()]


def _objects(message: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(bucket, key, region) of each object a notification announces."""
    try:
        body = json.loads(str(message.get("Body", "")))
    except ValueError:
        return []
    records = body.get("Records") if isinstance(body, dict) else None
    found = []
    for record in records if isinstance(records, list) else []:
        if not isinstance(record, dict):
            continue
        if not str(record.get("eventName", "")).startswith("ObjectCreated:"):
            continue
        s3 = record.get("s3") or {}
        bucket = (s3.get("bucket") or {}).get("name")
        key = (s3.get("object") or {}).get("key")
        if isinstance(bucket, str) and isinstance(key, str):
            found.append((bucket, unquote_plus(key), str(record.get("awsRegion") or "")))
    return found


async def _read_object(
    context: PullContext, config: S3SourceConfig, bucket: str, key: str, region: str
) -> bytes:
    region = region or config.region
    target = S3Target(
        endpoint=context.s3_endpoint or aws_endpoint(region),
        bucket=bucket,
        region=region,
        access_key_id=config.auth.access_key_id,
        secret_access_key=config.auth.secret_access_key,
    )
    url = target.url(key)
    headers = signed_headers(target, "GET", url, b"")
    chunks: list[bytes] = []
    size = 0
    try:
        async with context.client.stream(
            "GET", url, headers=dict(headers), timeout=context.timeout_s
        ) as answer:
            async for chunk in answer.aiter_bytes():
                size += len(chunk)
                if size > MAX_OBJECT_BYTES:
                    raise SqsFailed(f"s3://{bucket}/{key} is over {MAX_OBJECT_BYTES} bytes")
                chunks.append(chunk)
            status = answer.status_code
    except httpx.HTTPError as error:
        raise SqsFailed(f"s3://{bucket}/{key}: {type(error).__name__}: {error}") from None
    if status != 200:
        raise SqsFailed(f"s3://{bucket}/{key}: HTTP {status}")
    return b"".join(chunks)


async def _pull(config: S3SourceConfig, context: PullContext) -> Pulled:
    import anyio

    queue = Queue(config.sqs_queue_url, config.region, config.auth)
    messages = await receive_messages(context.client, queue, timeout_s=context.timeout_s)
    events: list[dict[str, Any]] = []
    for message in messages:
        for bucket, key, region in _objects(message):
            data = await _read_object(context, config, bucket, key, region)
            lines = await anyio.to_thread.run_sync(object_lines, data, config.compression)
            if len(events) + len(lines) > MAX_EVENTS:
                raise SqsFailed(f"more than {MAX_EVENTS} lines in one poll (s3://{bucket}/{key})")
            events.extend({"message": line, "bucket": bucket, "object": key} for line in lines)
    return Pulled(events, deleter(context.client, queue, messages, timeout_s=context.timeout_s))


def _build(_config: S3SourceConfig, _context: BuildContext, _node: NodeRef) -> None:
    return None


COMPONENT: Component[S3SourceConfig] = Component(
    kind="source",
    type="s3",
    config_model=S3SourceConfig,
    build=_build,
    describe="Objects of an S3 bucket announced on an SQS queue, one event per line "
    "(`sqs_queue_url`, `region`, `auth`, `compression`)",
    pull=_pull,
)

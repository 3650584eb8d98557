"""The ``sqs`` source: messages of an Amazon SQS queue (``queue_url``, ``region``,
``auth {access_key_id, secret_access_key}``: the provider's fields, all required).

Each published node is polled about once a second by the worker's pull scheduler
(``runtime/pull_sources.py``): ``ReceiveMessage`` (at most 10 messages, no long wait),
each message one event ``{"message": <body>}``, and ``DeleteMessageBatch`` of those
messages only once every destination of the pipeline took them; a message not
deleted comes back after the queue's visibility timeout (at-least-once). The requests
are SQS's JSON protocol (``X-Amz-Target: AmazonSQS.<Action>``), signed with AWS
Signature V4 (botocore's signer), sent to the queue URL's host through the
destination guard (a queue URL on a private address is refused unless the operator
allowed it). Answers are read up to ``MAX_ANSWER_BYTES``. A ``queue_url`` that is not a
URL (the provider's own test data sends ``"sqs_queue_url"``) is saved as sent; polling
it fails and is logged.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

import httpx
from pydantic import BaseModel, ConfigDict, Field

from tidegate.components.base import BuildContext, Component, NodeRef
from tidegate.components.sources.pull import PullContext, Pulled

__all__ = [
    "COMPONENT",
    "MAX_ANSWER_BYTES",
    "Queue",
    "SqsAuth",
    "SqsFailed",
    "SqsSourceConfig",
    "deleter",
    "receive_messages",
    "sqs_call",
]

MAX_MESSAGES: Final = 10  # SQS's most per ReceiveMessage
MAX_ANSWER_BYTES: Final = 4 * 1024 * 1024  # 10 messages of 256 KiB, with their envelope


class SqsFailed(Exception):
    """The queue refused a request, or it could not be sent."""


class SqsAuth(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    access_key_id: str = Field(min_length=1, max_length=128)
    secret_access_key: str = Field(min_length=1, max_length=256)


class SqsSourceConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    queue_url: str = Field(min_length=1, max_length=2048)
    region: str = Field(min_length=1, max_length=64, pattern=r"^[a-z0-9-]+$")
    auth: SqsAuth


@dataclass(frozen=True, slots=True)
class Queue:
    url: str
    region: str
    auth: SqsAuth


def _endpoint(queue_url: str) -> str:
    parts = urlsplit(queue_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SqsFailed(f"queue_url {queue_url!r} is not an http(s) URL")
    return f"{parts.scheme}://{parts.netloc}/"


def _signed(auth: SqsAuth, region: str, url: str, target: str, body: bytes) -> dict[str, str]:
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    request = AWSRequest(
        method="POST",
        url=url,
        data=body,
        headers={
            "Content-Type": "application/x-amz-json-1.0",
            "X-Amz-Target": f"AmazonSQS.{target}",
        },
    )
    SigV4Auth(Credentials(auth.access_key_id, auth.secret_access_key), "sqs", region).add_auth(
        request
    )
    return {name: str(value) for name, value in request.headers.items() if name.lower() != "host"}


async def sqs_call(
    client: httpx.AsyncClient,
    queue: Queue,
    target: str,
    payload: dict[str, Any],
    *,
    timeout_s: float,
) -> dict[str, Any]:
    """One signed SQS JSON-protocol request; its answer (``SqsFailed`` otherwise)."""
    url = _endpoint(queue.url)
    body = json.dumps({"QueueUrl": queue.url, **payload}).encode()
    headers = _signed(queue.auth, queue.region, url, target, body)
    chunks: list[bytes] = []
    size = 0
    try:
        async with client.stream(
            "POST", url, content=body, headers=headers, timeout=timeout_s
        ) as answer:
            async for chunk in answer.aiter_bytes():
                size += len(chunk)
                if size > MAX_ANSWER_BYTES:
                    raise SqsFailed(f"{target}: answer over {MAX_ANSWER_BYTES} bytes")
                chunks.append(chunk)
            status = answer.status_code
    except httpx.HTTPError as error:
        raise SqsFailed(f"{target}: {type(error).__name__}: {error}") from None
    text = b"".join(chunks)
    if status != 200:
        raise SqsFailed(f"{target}: HTTP {status}: {text[:300].decode('utf-8', 'replace')}")
    try:
        document = json.loads(text) if text else {}
    except ValueError:
        raise SqsFailed(f"{target}: the answer is not JSON") from None
    if not isinstance(document, dict):
        raise SqsFailed(f"{target}: the answer is not a JSON object")
    return document


async def receive_messages(
    client: httpx.AsyncClient, queue: Queue, *, timeout_s: float
) -> list[dict[str, Any]]:
    """Up to ``MAX_MESSAGES`` messages waiting (no long poll)."""
    answer = await sqs_call(
        client,
        queue,
        "ReceiveMessage",
        {"MaxNumberOfMessages": MAX_MESSAGES, "WaitTimeSeconds": 0},
        timeout_s=timeout_s,
    )
    return [m for m in answer.get("Messages") or [] if isinstance(m, dict)]


def deleter(
    client: httpx.AsyncClient, queue: Queue, messages: list[dict[str, Any]], *, timeout_s: float
) -> Callable[[], Awaitable[None]]:
    """Deletes ``messages`` from the queue when awaited."""
    handles = [m["ReceiptHandle"] for m in messages if isinstance(m.get("ReceiptHandle"), str)]

    async def delete() -> None:
        if handles:
            entries = [{"Id": str(n), "ReceiptHandle": h} for n, h in enumerate(handles)]
            await sqs_call(
                client, queue, "DeleteMessageBatch", {"Entries": entries}, timeout_s=timeout_s
            )

    return delete


async def _pull(config: SqsSourceConfig, context: PullContext) -> Pulled:
    queue = Queue(config.queue_url, config.region, config.auth)
    messages = await receive_messages(context.client, queue, timeout_s=context.timeout_s)
    events = [{"message": str(m.get("Body", ""))} for m in messages]
    return Pulled(events, deleter(context.client, queue, messages, timeout_s=context.timeout_s))


def _build(_config: SqsSourceConfig, _context: BuildContext, _node: NodeRef) -> None:
    return None


COMPONENT: Component[SqsSourceConfig] = Component(
    kind="source",
    type="sqs",
    config_model=SqsSourceConfig,
    build=_build,
    describe="Messages of an Amazon SQS queue, polled and deleted once delivered "
    "(`queue_url`, `region`, `auth`)",
    pull=_pull,
)

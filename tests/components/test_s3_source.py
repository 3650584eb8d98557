"""The ``s3`` source against moto in server mode: objects put with boto3 into a bucket
whose event notifications go to an SQS queue are read (gzip, zstd, plain), one event
per line, through a published pipeline into the log store; the notifications are
deleted once delivered. The operator pointed ``TIDEGATE_S3_ENDPOINT`` at moto and
allowed loopback."""

from __future__ import annotations

import asyncio
import gzip
import uuid
from typing import Any

import boto3
import cramjam
import pytest
from tests.components.factories import wire_source
from tests.conftest import AppClient
from tests.gateway.factories import new_account, stored_lines
from tests.objectstore.moto_server import (
    ACCESS_KEY_ID,
    REGION,
    SECRET_ACCESS_KEY,
    MotoServer,
    moto_server,  # noqa: F401  (the session's server)
)

from tidegate.components.sources.s3 import MAX_OBJECT_BYTES, object_lines
from tidegate.components.sources.sqs import SqsFailed
from tidegate.runtime.pull_sources import PullScheduler
from tidegate.runtime.runtime import runtime_of


def _aws(server: MotoServer, service: str) -> Any:
    return boto3.client(
        service,
        endpoint_url=server.endpoint,
        region_name=REGION,
        aws_access_key_id=ACCESS_KEY_ID,
        aws_secret_access_key=SECRET_ACCESS_KEY,
    )


def _notified_bucket(server: MotoServer) -> tuple[str, str]:
    """A bucket whose ObjectCreated events go to a new queue: (bucket, queue URL)."""
    sqs, s3 = _aws(server, "sqs"), _aws(server, "s3")
    name = f"n-{uuid.uuid4().hex[:12]}"
    queue_url = sqs.create_queue(QueueName=name)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    s3.create_bucket(Bucket=name)
    s3.put_bucket_notification_configuration(
        Bucket=name,
        NotificationConfiguration={
            "QueueConfigurations": [{"QueueArn": arn, "Events": ["s3:ObjectCreated:*"]}]
        },
    )
    # moto sends S3's s3:TestEvent on configuration, as S3 does: left in the queue.
    return name, queue_url


def _waiting(server: MotoServer, queue_url: str) -> int:
    attributes = _aws(server, "sqs").get_queue_attributes(
        QueueUrl=queue_url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"]) + int(
        attributes["ApproximateNumberOfMessagesNotVisible"]
    )


async def test_s3_objects_become_lines(
    pull_client: AppClient,
    moto_server: MotoServer,  # noqa: F811
) -> None:
    client = pull_client
    app = client._transport.app  # type: ignore[attr-defined]
    runtime = runtime_of(app)
    await runtime.pull_sources.close()  # this test drives the polls itself
    bucket, queue_url = await asyncio.to_thread(_notified_bucket, moto_server)
    s3 = _aws(moto_server, "s3")
    objects = {
        "logs/a b.log.gz": gzip.compress(b"gzip one\ngzip two\n"),
        "logs/b.zst": bytes(cramjam.zstd.compress(b"zstd one\r\n\nzstd two")),
        "logs/c.txt": "plain ✓\n".encode(),
    }
    for key, body in objects.items():
        await asyncio.to_thread(s3.put_object, Bucket=bucket, Key=key, Body=body)
    account = await new_account(client, throttle=False)
    config = {
        "auth": {"access_key_id": ACCESS_KEY_ID, "secret_access_key": SECRET_ACCESS_KEY},
        "region": REGION,
        "sqs_queue_url": queue_url,
        "compression": "auto",
    }
    await wire_source(client, account, "s3", config, routed=False)
    scheduler = PullScheduler()
    delivered = 0
    for _ in range(3):  # at most 10 messages a poll: the test event and three objects
        delivered += await scheduler.tick(runtime, app.state.tidegate.intake)
    assert scheduler.failures == 0
    assert delivered == 5
    lines = await stored_lines(client.database_url, account.account_id)
    assert sorted(line.line for line in lines) == [
        "gzip one",
        "gzip two",
        "plain ✓",
        "zstd one",
        "zstd two",
    ]
    by_text = {line.line: line for line in lines}
    assert by_text["gzip one"].meta is not None
    assert by_text["gzip one"].meta["object"] == "logs/a b.log.gz"
    assert by_text["gzip one"].meta["bucket"] == bucket
    assert await asyncio.to_thread(_waiting, moto_server, queue_url) == 0


@pytest.mark.parametrize("compression", ["gzip", "zstd"])
def test_an_object_inflating_past_the_bound_is_refused(compression: str) -> None:
    raw = b"\n" * (MAX_OBJECT_BYTES + 1)
    packed = gzip.compress(raw) if compression == "gzip" else bytes(cramjam.zstd.compress(raw))
    with pytest.raises(SqsFailed):
        object_lines(packed, "auto")
    assert object_lines(gzip.compress(b"x\n" * 10), compression="gzip") == ["x"] * 10

"""The ``sqs`` source against moto in server mode (a real SQS API process): messages
sent with boto3 run through a published pipeline into the log store, and are deleted
from the queue only once delivered. The operator allowed loopback (moto's address)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import boto3
from tests.components.factories import wire_source
from tests.components.receiver import Receiver
from tests.conftest import AppClient
from tests.gateway.factories import new_account, stored_lines
from tests.objectstore.moto_server import (
    ACCESS_KEY_ID,
    REGION,
    SECRET_ACCESS_KEY,
    MotoServer,
    moto_server,  # noqa: F401  (the session's server)
)

from tidegate.runtime.pull_sources import PullScheduler
from tidegate.runtime.runtime import runtime_of


def _sqs(server: MotoServer) -> Any:
    return boto3.client(
        "sqs",
        endpoint_url=server.endpoint,
        region_name=REGION,
        aws_access_key_id=ACCESS_KEY_ID,
        aws_secret_access_key=SECRET_ACCESS_KEY,
    )


def _waiting(sqs: Any, queue_url: str) -> int:
    attributes = sqs.get_queue_attributes(
        QueueUrl=queue_url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"]) + int(
        attributes["ApproximateNumberOfMessagesNotVisible"]
    )


def _config(queue_url: str) -> dict[str, Any]:
    return {
        "queue_url": queue_url,
        "region": REGION,
        "auth": {"access_key_id": ACCESS_KEY_ID, "secret_access_key": SECRET_ACCESS_KEY},
    }


async def test_sqs_messages_are_delivered_then_deleted(
    pull_client: AppClient,
    moto_server: MotoServer,  # noqa: F811
) -> None:
    client = pull_client
    app = client._transport.app  # type: ignore[attr-defined]
    runtime = runtime_of(app)
    await runtime.pull_sources.close()  # this test drives the polls itself
    sqs = _sqs(moto_server)
    queue_url = sqs.create_queue(QueueName=f"q-{uuid.uuid4().hex[:12]}")["QueueUrl"]
    bodies = [f"message {n} ✓" for n in range(12)]  # more than one ReceiveMessage takes
    for body in bodies:
        await asyncio.to_thread(sqs.send_message, QueueUrl=queue_url, MessageBody=body)
    account = await new_account(client, throttle=False)
    await wire_source(client, account, "sqs", _config(queue_url), routed=False)
    scheduler = PullScheduler()
    intake = app.state.tidegate.intake
    assert await scheduler.tick(runtime, intake) == 10
    assert await scheduler.tick(runtime, intake) == 2
    assert await scheduler.tick(runtime, intake) == 0
    lines = await stored_lines(client.database_url, account.account_id)
    assert sorted(line.line for line in lines) == sorted(bodies)
    assert await asyncio.to_thread(_waiting, sqs, queue_url) == 0
    assert scheduler.failures == 0


async def test_an_unreadable_queue_is_logged_not_fatal(
    pull_client: AppClient,
    moto_server: MotoServer,  # noqa: F811
) -> None:
    client = pull_client
    app = client._transport.app  # type: ignore[attr-defined]
    runtime = runtime_of(app)
    await runtime.pull_sources.close()
    account = await new_account(client, throttle=False)
    # The provider's own test data: "sqs_queue_url" is saved and read back as sent.
    await wire_source(client, account, "sqs", _config("sqs_queue_url"), routed=False)
    missing = f"{moto_server.endpoint}/123456789012/no-such-queue-{uuid.uuid4().hex[:8]}"
    other = await new_account(client, throttle=False)
    await wire_source(client, other, "sqs", _config(missing), routed=False)
    scheduler = PullScheduler()
    await scheduler.tick(runtime, app.state.tidegate.intake)
    assert scheduler.failures >= 2
    assert await stored_lines(client.database_url, account.account_id) == []


async def test_a_message_not_delivered_is_not_deleted(
    pull_client: AppClient,
    moto_server: MotoServer,  # noqa: F811
) -> None:
    client = pull_client
    app = client._transport.app  # type: ignore[attr-defined]
    runtime = runtime_of(app)
    await runtime.pull_sources.close()
    sqs = _sqs(moto_server)
    queue_url = sqs.create_queue(
        QueueName=f"q-{uuid.uuid4().hex[:12]}", Attributes={"VisibilityTimeout": "0"}
    )["QueueUrl"]
    await asyncio.to_thread(sqs.send_message, QueueUrl=queue_url, MessageBody="kept")
    account = await new_account(client, throttle=False)
    async with Receiver(script=[400, 200]) as receiver:
        await wire_source(
            client,
            account,
            "sqs",
            _config(queue_url),
            [
                (
                    "loki",
                    "destination",
                    "loki",
                    {"endpoint": receiver.base, "labels": {"job": "x"}},
                    ["source"],
                )
            ],
            routed=False,
        )
        scheduler = PullScheduler()
        intake = app.state.tidegate.intake
        assert await scheduler.tick(runtime, intake) == 0  # Loki refused it: not deleted
        assert await asyncio.to_thread(_waiting, sqs, queue_url) == 1
        assert await scheduler.tick(runtime, intake) == 1  # fetched again, delivered
        assert await asyncio.to_thread(_waiting, sqs, queue_url) == 0
    assert len(receiver.requests) == 2
    assert b"kept" in receiver.requests[1].body

"""The ``sqs`` source's queue URL goes through the destination guard: on a server whose
operator allowed no private address, a queue on 127.0.0.1 (a live moto) is never
reached, and its messages stay in the queue."""

from __future__ import annotations

import asyncio
import uuid

from tests.components.factories import wire_source
from tests.components.test_sqs_source import _config, _sqs, _waiting
from tests.conftest import AppClient
from tests.gateway.factories import new_account, stored_lines
from tests.objectstore.moto_server import (
    MotoServer,
    moto_server,  # noqa: F401  (the session's server)
)

from tidegate.runtime.pull_sources import PullScheduler
from tidegate.runtime.runtime import runtime_of


async def test_a_queue_on_a_private_address_is_refused(
    isolated_client: AppClient,
    moto_server: MotoServer,  # noqa: F811
) -> None:
    client = isolated_client
    app = client._transport.app  # type: ignore[attr-defined]
    runtime = runtime_of(app)
    await runtime.pull_sources.close()
    sqs = _sqs(moto_server)
    queue_url = sqs.create_queue(QueueName=f"q-{uuid.uuid4().hex[:12]}")["QueueUrl"]
    await asyncio.to_thread(sqs.send_message, QueueUrl=queue_url, MessageBody="private")
    account = await new_account(client, throttle=False)
    await wire_source(client, account, "sqs", _config(queue_url), routed=False)
    scheduler = PullScheduler()
    assert await scheduler.tick(runtime, app.state.tidegate.intake) == 0
    assert scheduler.failures == 1
    assert await stored_lines(client.database_url, account.account_id) == []
    assert await asyncio.to_thread(_waiting, sqs, queue_url) == 1  # never received

"""Closing the Redis tail broker returns even when its reader swallows the cancel.

redis-py's ``get_message(timeout=...)`` turns its own timeout into ``None``; on
Python 3.11 a cancel landing as that timeout expires is reported as the timeout, so the
reader saw ``None`` instead of ``CancelledError`` and looped on: ``close()`` (and the
server's shutdown with it) waited forever. The reader is wrapped here so that every
cancel landing in ``get_message`` is swallowed that way, deterministically."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from redis.asyncio import Redis
from tests.conftest import REDIS_PREFIX, REDIS_URL

from tidegate.logs.filtering import LineFilter
from tidegate.logs.tail import RedisTailBroker, TailLine

# Generous: only a hang (the bug) takes longer; never a measure of speed.
HANG_S = 30.0


async def _finishes(awaitable: Any) -> bool:
    task = asyncio.ensure_future(awaitable)
    done, _ = await asyncio.wait({task}, timeout=HANG_S)
    if not done:
        task.cancel()  # may be swallowed too: leave it behind rather than wait
        return False
    task.result()
    return True


@pytest.mark.redis
async def test_close_returns_when_get_message_swallows_the_cancel() -> None:
    redis = Redis.from_url(REDIS_URL)
    broker = RedisTailBroker(redis, redis_prefix=REDIS_PREFIX)
    await broker.start()
    pubsub = broker._pubsub
    assert pubsub is not None
    real_get_message = pubsub.get_message
    inside = asyncio.Event()
    swallowed = 0

    async def swallowing_get_message(**kwargs: Any) -> Any:
        nonlocal swallowed
        inside.set()
        try:
            return await real_get_message(**kwargs)
        except asyncio.CancelledError:
            swallowed += 1
            return None  # what redis-py reports when its timeout won the race

    pubsub.get_message = swallowing_get_message  # type: ignore[method-assign]
    account = f"acct-{uuid.uuid4().hex}"
    try:
        # The reader works: a subscription is confirmed and a line arrives.
        async with broker.subscribe(account, LineFilter()) as subscription:
            await broker.publish(account, [TailLine(line="hello", ts=1, host="h")])
            batch = await subscription.next_batch(timeout=HANG_S)
            assert [line.line for line in batch.lines] == ["hello"]
        inside.clear()
        await inside.wait()  # the reader is waiting in get_message: the cancel lands there
        assert await _finishes(broker.close()), "close() hung: the reader never stopped"
        assert swallowed >= 1  # the cancel really was swallowed
    finally:
        await redis.aclose()

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis
from tests.processing.throttle_redis_helpers import REDIS_URL, delete_prefix, new_prefix


@pytest.fixture
async def redis_client() -> AsyncIterator[Redis]:
    client = Redis.from_url(REDIS_URL)
    try:
        yield client
    finally:
        await client.aclose()


@pytest.fixture
async def redis_prefix(redis_client: Redis) -> AsyncIterator[str]:
    prefix = new_prefix()
    try:
        yield prefix
    finally:
        await delete_prefix(redis_client, prefix)

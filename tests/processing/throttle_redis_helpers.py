"""Helpers for tests against the real Redis on 127.0.0.1:6379."""

from __future__ import annotations

import uuid

from redis.asyncio import Redis
from tests.conftest import REDIS_URL

__all__ = ["REDIS_URL", "delete_prefix", "keys_under", "new_prefix"]


def new_prefix() -> str:
    """A key prefix unique to one test (with a hash tag, as in production)."""
    return f"tidegate-test:throttle:{{{uuid.uuid4().hex}}}"


async def delete_prefix(client: Redis, prefix: str) -> None:
    keys = [key async for key in client.scan_iter(match=f"{prefix}*", count=1000)]
    if keys:
        await client.delete(*keys)


async def keys_under(client: Redis, prefix: str) -> list[bytes]:
    return [key async for key in client.scan_iter(match=f"{prefix}*", count=1000)]

"""Live tail's Redis channels, as a probe connection sees them."""

from __future__ import annotations

from redis.asyncio import Redis
from tests.waiting import eventually


async def subscribers(probe: Redis, channel: str) -> int:
    """How many connections are subscribed to ``channel`` (every server's broker holds
    one per account it has local subscribers for)."""
    count: int = dict(await probe.pubsub_numsub(channel))[channel.encode()]
    return count


async def left_the_channel(probe: Redis, channel: str) -> None:
    """Until no broker is subscribed to ``channel``: a broker leaves it in the
    background once its last local subscriber is gone."""

    async def nobody() -> bool:
        return await subscribers(probe, channel) == 0

    await eventually(nobody, what=lambda: f"every broker left {channel}")

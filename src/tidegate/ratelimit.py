"""Per-key request rate limits for the management API (GCRA).

GCRA keeps one number per key (the theoretical arrival time), so a limit of N per
minute admits a burst of N and then one request every 60/N seconds, with no fixed
window edge at which 2N could pass. In memory for one process; in Redis (one Lua
script, Redis's own clock) when several workers or hosts must share the limit.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Protocol

from redis.asyncio import Redis
from redis.exceptions import RedisError

log = logging.getLogger("tidegate.ratelimit")

PERIOD_MS = 60_000


class RateLimiter(Protocol):
    async def retry_after(self, key: str) -> float | None:
        """Record one request; None when admitted, else seconds until one would be."""


class NoLimit:
    async def retry_after(self, key: str) -> float | None:
        return None


class MemoryRateLimiter:
    def __init__(self, per_minute: int) -> None:
        self.interval_ms = PERIOD_MS / per_minute
        self._tat: dict[str, float] = {}
        self._next_sweep = 0.0

    def _now_ms(self) -> float:
        return time.monotonic() * 1000.0

    async def retry_after(self, key: str) -> float | None:
        now = self._now_ms()
        if now >= self._next_sweep:
            # Keys whose arrival time has passed carry no state worth keeping.
            self._tat = {k: v for k, v in self._tat.items() if v > now}
            self._next_sweep = now + PERIOD_MS
        tat = max(self._tat.get(key, now), now)
        new_tat = tat + self.interval_ms
        if new_tat - now > PERIOD_MS:
            return (new_tat - now - PERIOD_MS) / 1000.0
        self._tat[key] = new_tat
        return None


_GCRA = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local interval = tonumber(ARGV[1])
local period = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local new_tat = tat + interval
if new_tat - now > period then
  return tostring(new_tat - now - period)
end
redis.call('SET', KEYS[1], tostring(new_tat), 'PX', math.ceil(new_tat - now) + 1)
return '-1'
"""


class RedisRateLimiter:
    """Shared across workers and hosts. Fails open when Redis cannot be reached: losing
    the limiter must not take the API down with it."""

    def __init__(self, redis: Redis, per_minute: int, *, prefix: str = "tidegate:rl:") -> None:
        self.redis = redis
        self.interval_ms = PERIOD_MS / per_minute
        self.prefix = prefix
        self._script = redis.register_script(_GCRA)

    async def retry_after(self, key: str) -> float | None:
        try:
            raw = await self._script(keys=[self.prefix + key], args=[self.interval_ms, PERIOD_MS])
        except (RedisError, OSError):
            log.warning("rate limiter: Redis unreachable, admitting the request")
            return None
        wait = float(raw)
        return None if wait < 0 else wait / 1000.0


def retry_after_header(seconds: float) -> str:
    return str(max(1, math.ceil(seconds)))

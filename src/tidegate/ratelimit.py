"""Per-key request rate limits for the management API (GCRA).

GCRA keeps one number per key (the theoretical arrival time), so a limit of N per
minute admits a burst of N and then one request every 60/N seconds, with no fixed
window edge at which 2N could pass. In memory for one process; in Redis (one Lua
script, Redis's own clock) when several workers or hosts must share the limit.

The limiter runs on every management request before any transaction is opened, so a
slow Redis costs at most a short timeout, and a circuit breaker stops paying even that:
after a few failures in a row the limiter admits requests without asking Redis for a
while, then lets one request probe whether Redis is back.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable
from typing import Protocol

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
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


class CircuitBreaker:
    """Closed: calls go through. After ``failures`` failures in a row it opens for
    ``cooldown_s``: calls are skipped. Then one call probes; success closes it, failure
    keeps it open for another cooldown. Logs once when it opens and once when it closes."""

    def __init__(
        self,
        *,
        name: str,
        failures: int = 3,
        cooldown_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.threshold = failures
        self.cooldown_s = cooldown_s
        self._clock = clock
        self._failures = 0
        self._open = False
        self._retry_at = 0.0

    @property
    def is_open(self) -> bool:
        return self._open

    def allow(self) -> bool:
        if not self._open:
            return True
        now = self._clock()
        if now < self._retry_at:
            return False
        # This call is the probe; the others keep skipping until it has answered.
        self._retry_at = now + self.cooldown_s
        return True

    def succeeded(self) -> None:
        self._failures = 0
        if self._open:
            self._open = False
            log.warning("%s: reachable again, circuit closed", self.name)

    def failed(self, error: BaseException) -> None:
        self._failures += 1
        if not self._open and self._failures >= self.threshold:
            self._open = True
            self._retry_at = self._clock() + self.cooldown_s
            log.warning(
                "%s: %d failures in a row (last: %s); circuit open, skipping it for %.0f s",
                self.name,
                self._failures,
                type(error).__name__,
                self.cooldown_s,
            )


def limiter_redis(url: str, *, timeout_s: float) -> Redis:
    """A Redis client of the limiter's own: short socket timeouts and no retries (the
    shared client's pub/sub reader must be able to wait on a socket indefinitely)."""
    return Redis.from_url(
        url,
        socket_timeout=timeout_s,
        socket_connect_timeout=timeout_s,
        retry=Retry(NoBackoff(), 0),
    )


class RedisRateLimiter:
    """Shared across workers and hosts. Fails open when Redis cannot answer within
    ``timeout_s``: losing the limiter must not take the API down with it."""

    def __init__(
        self,
        redis: Redis,
        per_minute: int,
        *,
        prefix: str = "tidegate:rl:",
        timeout_s: float = 0.2,
        breaker: CircuitBreaker | None = None,
    ) -> None:
        self.redis = redis
        self.interval_ms = PERIOD_MS / per_minute
        self.prefix = prefix
        self.timeout_s = timeout_s
        self.breaker = breaker or CircuitBreaker(name="rate limiter Redis")
        self._script = redis.register_script(_GCRA)

    async def retry_after(self, key: str) -> float | None:
        if not self.breaker.allow():
            return None
        try:
            # The socket timeouts bound each read; this bounds the whole call (connect,
            # script load, reply) whatever the client's settings.
            async with asyncio.timeout(self.timeout_s):
                raw = await self._script(
                    keys=[self.prefix + key], args=[self.interval_ms, PERIOD_MS]
                )
        except (RedisError, OSError) as error:  # TimeoutError is an OSError
            # Never log the key: it identifies a credential.
            self.breaker.failed(error)
            return None
        self.breaker.succeeded()
        wait = float(raw)
        return None if wait < 0 else wait / 1000.0


def retry_after_header(seconds: float) -> str:
    return str(max(1, math.ceil(seconds)))

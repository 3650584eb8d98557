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
from typing import Any, Protocol

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

log = logging.getLogger("tidegate.ratelimit")

PERIOD_NS = 60 * 10**9
PERIOD_US = 60 * 10**6


class RateLimiter(Protocol):
    async def retry_after(self, key: str) -> float | None:
        """Record one request; None when admitted, else seconds until one would be."""


class NoLimit:
    async def retry_after(self, key: str) -> float | None:
        return None


class MemoryRateLimiter:
    """Exact arithmetic: times are integer nanoseconds scaled by ``per_minute``, so the
    emission interval is ``PERIOD_NS`` units and the period ``PERIOD_NS * per_minute``
    units exactly (``N`` intervals are the period, whatever ``N`` and the clock: a float
    interval such as 60000/7 ms once refused the last request of a burst of ``N``)."""

    def __init__(self, per_minute: int, *, clock: Callable[[], int] = time.monotonic_ns) -> None:
        self.per_minute = per_minute
        self._clock = clock
        self._period = PERIOD_NS * per_minute  # in units of 1/per_minute ns
        self._tat: dict[str, int] = {}
        self._next_sweep = 0

    async def retry_after(self, key: str) -> float | None:
        now_ns = self._clock()
        now = now_ns * self.per_minute
        if now_ns >= self._next_sweep:
            # Keys whose arrival time has passed carry no state worth keeping.
            self._tat = {k: v for k, v in self._tat.items() if v > now}
            self._next_sweep = now_ns + PERIOD_NS
        tat = max(self._tat.get(key, now), now)
        new_tat = tat + PERIOD_NS  # one emission interval: PERIOD_NS / per_minute ns
        excess = new_tat - now - self._period
        if excess > 0:
            return excess / self.per_minute / 1e9
        self._tat[key] = new_tat
        return None


# Redis's Lua numbers are doubles (exact integers below 2^53). The arrival time is kept
# as whole microseconds plus a remainder in 1/per_minute microseconds ("tat_us:rem"),
# and only differences from now (at most a period) are scaled by per_minute, so every
# value stays an exact integer. ARGV: per_minute, the period in microseconds, and
# optionally now in microseconds (tests; otherwise Redis's own clock).
_GCRA = """
local per_minute = tonumber(ARGV[1])
local period = tonumber(ARGV[2])
local now
if ARGV[3] then
  now = tonumber(ARGV[3])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local diff = 0
local stored = redis.call('GET', KEYS[1])
if stored then
  local tat_us, rem = string.match(stored, '^(%d+):(%d+)$')
  if tat_us then
    diff = (tonumber(tat_us) - now) * per_minute + tonumber(rem)
    if diff < 0 then diff = 0 end
  end
end
local new_diff = diff + period
local excess = new_diff - period * per_minute
if excess > 0 then
  return string.format('%d', excess)
end
local ahead = math.floor(new_diff / per_minute)
local value = string.format('%d:%d', now + ahead, new_diff - ahead * per_minute)
redis.call('SET', KEYS[1], value, 'PX', math.floor(ahead / 1000) + 2)
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
        clock_us: Callable[[], int] | None = None,
    ) -> None:
        """``clock_us``: now in microseconds, for tests; by default Redis's own clock
        (one clock for every worker and host sharing the limit)."""
        self.redis = redis
        self.per_minute = per_minute
        self.clock_us = clock_us
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
                raw = await self.call_script(key)
        except (RedisError, OSError) as error:  # TimeoutError is an OSError
            # Never log the key: it identifies a credential.
            self.breaker.failed(error)
            return None
        self.breaker.succeeded()
        return self.wait_of(raw)

    async def call_script(self, key: str, *, client: Redis | None = None) -> Any:
        """One GCRA step for ``key`` (queued on ``client``, a pipeline, when given)."""
        args: list[int] = [self.per_minute, PERIOD_US]
        if self.clock_us is not None:
            args.append(self.clock_us())
        return await self._script(keys=[self.prefix + key], args=args, client=client)

    def wait_of(self, raw: Any) -> float | None:
        """The script's reply: None when admitted, else seconds to wait."""
        excess = int(raw)
        return None if excess < 0 else excess / self.per_minute / 1e6


def retry_after_header(seconds: float) -> str:
    return str(max(1, math.ceil(seconds)))

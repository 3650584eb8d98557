"""Failed sign-ins counted per key (fixed windows), with the time of the last failure.

In Redis when set (``<TIDEGATE_REDIS_PREFIX>signin:<key>``, INCR with an expiry, so
every worker and host counts together); else, with several workers, in the database
(tidegate.auth.shared_counts); else in a bounded map per process: at
``MAX_KEYS`` the oldest windows are forgotten first (their counts would have expired
anyway). When Redis is set but does not answer, the counts fall back to the map of
this process (never to no limit), and the fall-back is logged (once per outage). The
map counts this process's failures while Redis answers too, so a pair refused before
Redis died stays refused during the outage (a tally is the larger of the two).
What the keys are and what they limit: tidegate.sessions.service, docs/isolation.md.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from redis.asyncio import Redis
from redis.exceptions import RedisError
from sqlalchemy.exc import SQLAlchemyError

from tidegate.auth.shared_counts import SharedCounts
from tidegate.clock import now_ms
from tidegate.config import DEFAULT_REDIS_PREFIX

MAX_KEYS = 100_000

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Tally:
    """Failures in the current window, and when the last one was (epoch seconds)."""

    count: int = 0
    last_s: float = 0.0


class _LocalCounts:
    def __init__(self, *, window_s: float, max_keys: int) -> None:
        self.window_s = window_s
        self.max_keys = max_keys
        # key -> (count, window ends (monotonic), last failure (epoch s))
        self._counts: dict[str, tuple[int, float, float]] = {}

    def tally(self, key: str) -> Tally:
        found = self._counts.get(key)
        if found is None or found[1] <= time.monotonic():
            return Tally()
        return Tally(found[0], found[2])

    def failed(self, key: str, *, at_s: float) -> None:
        now = time.monotonic()
        count, until, _ = self._counts.get(key, (0, 0.0, 0.0))
        if until <= now:
            count, until = 0, now + self.window_s
        self._counts.pop(key, None)
        if len(self._counts) >= self.max_keys:
            self._counts = {k: v for k, v in self._counts.items() if v[1] > now}
            while len(self._counts) >= self.max_keys:
                self._counts.pop(next(iter(self._counts)))
        self._counts[key] = (count + 1, until, at_s)

    def succeeded(self, key: str) -> None:
        self._counts.pop(key, None)


class FailureCounter:
    def __init__(
        self,
        *,
        max_failures: int,
        window_s: float,
        redis: Redis | None = None,
        redis_prefix: str = DEFAULT_REDIS_PREFIX,
        max_keys: int = MAX_KEYS,
        shared: SharedCounts | None = None,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        # When failures happen and how long ago the last one was (epoch ms; a test
        # moves its own). The windows' ends run on time.monotonic.
        self.clock = clock
        self.shared = shared if redis is None else None
        self.key_prefix = redis_prefix + "signin:"
        self.max_failures = max_failures
        self.window_s = window_s
        self.redis = redis
        self._local = _LocalCounts(window_s=window_s, max_keys=max_keys)
        self._redis_down = False

    def _fell_back(self, error: Exception) -> None:
        if not self._redis_down:
            log.warning(
                "%s did not answer (%s): failed sign-ins are counted in this process until it does",
                "Redis" if self.redis is not None else "The database",
                type(error).__name__,
            )
        self._redis_down = True

    def _answered(self) -> None:
        if self._redis_down:
            log.warning("Failed sign-ins are counted where they are shared again")
        self._redis_down = False

    def now_s(self) -> float:
        """This counter's clock in epoch seconds, as ``Tally.last_s``."""
        return self.clock() / 1000

    async def tally(self, key: str) -> Tally:
        if self.redis is not None:
            name = self.key_prefix + key
            try:
                count, last = await self.redis.mget([name, name + ":last"])
            except (RedisError, OSError) as error:
                self._fell_back(error)
            else:
                self._answered()
                return self._larger(key, Tally(int(count or 0), float(last or 0)))
        elif self.shared is not None:
            try:
                shared_count, shared_last = await self.shared.tally(key)
            except (SQLAlchemyError, OSError) as error:
                self._fell_back(error)
            else:
                self._answered()
                return self._larger(key, Tally(shared_count, shared_last))
        return self._local.tally(key)

    def _larger(self, key: str, shared: Tally) -> Tally:
        # The local counts of an outage still hold until their window ends.
        local = self._local.tally(key)
        return shared if shared.count >= local.count else local

    async def blocked(self, key: str) -> bool:
        return (await self.tally(key)).count >= self.max_failures

    async def failed(self, key: str) -> None:
        # Counted here whatever answers below: what holds when the shared store dies.
        at_ms = self.clock()
        at_s = at_ms / 1000
        self._local.failed(key, at_s=at_s)
        if self.redis is not None:
            name = self.key_prefix + key
            try:
                async with self.redis.pipeline(transaction=True) as pipe:
                    pipe.incr(name)
                    pipe.expire(name, int(self.window_s), nx=True)
                    pipe.set(name + ":last", repr(at_s), ex=int(self.window_s))
                    await pipe.execute()
            except (RedisError, OSError) as error:
                self._fell_back(error)
            else:
                self._answered()
        elif self.shared is not None:
            try:
                await self.shared.failed(key, window_s=self.window_s, at_ms=at_ms)
            except (SQLAlchemyError, OSError) as error:
                self._fell_back(error)
            else:
                self._answered()

    async def succeeded(self, key: str) -> None:
        self._local.succeeded(key)
        if self.redis is not None:
            name = self.key_prefix + key
            try:
                await self.redis.delete(name, name + ":last")
            except (RedisError, OSError) as error:
                self._fell_back(error)
        elif self.shared is not None:
            try:
                await self.shared.succeeded(key)
            except (SQLAlchemyError, OSError) as error:
                self._fell_back(error)

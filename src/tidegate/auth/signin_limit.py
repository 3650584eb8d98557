"""Failed sign-ins counted per e-mail and per client address (fixed windows).

In Redis when set (``<TIDEGATE_REDIS_PREFIX>signin:<key>``, INCR with an expiry, so
every worker and host counts together), else in a bounded map per process: at
``MAX_KEYS`` the oldest windows are forgotten first (their counts would have expired
anyway)."""

from __future__ import annotations

import time

from redis.asyncio import Redis
from redis.exceptions import RedisError

from tidegate.config import DEFAULT_REDIS_PREFIX

MAX_KEYS = 100_000


class FailureCounter:
    def __init__(
        self,
        *,
        max_failures: int,
        window_s: float,
        redis: Redis | None = None,
        redis_prefix: str = DEFAULT_REDIS_PREFIX,
        max_keys: int = MAX_KEYS,
    ) -> None:
        self.key_prefix = redis_prefix + "signin:"
        self.max_failures = max_failures
        self.window_s = window_s
        self.redis = redis
        self.max_keys = max_keys
        self._counts: dict[str, tuple[int, float]] = {}

    async def blocked(self, key: str) -> bool:
        if self.redis is not None:
            try:
                raw = await self.redis.get(self.key_prefix + key)
            except (RedisError, OSError):
                return False
            return raw is not None and int(raw) >= self.max_failures
        found = self._counts.get(key)
        return found is not None and found[1] > time.monotonic() and found[0] >= self.max_failures

    async def failed(self, key: str) -> None:
        if self.redis is not None:
            name = self.key_prefix + key
            try:
                async with self.redis.pipeline(transaction=True) as pipe:
                    pipe.incr(name)
                    pipe.expire(name, int(self.window_s), nx=True)
                    await pipe.execute()
            except (RedisError, OSError):
                pass
            return
        now = time.monotonic()
        count, until = self._counts.get(key, (0, 0.0))
        if until <= now:
            count, until = 0, now + self.window_s
        self._counts.pop(key, None)
        if len(self._counts) >= self.max_keys:
            self._counts = {k: v for k, v in self._counts.items() if v[1] > now}
            while len(self._counts) >= self.max_keys:
                self._counts.pop(next(iter(self._counts)))
        self._counts[key] = (count + 1, until)

    async def succeeded(self, key: str) -> None:
        if self.redis is not None:
            try:
                await self.redis.delete(self.key_prefix + key)
            except (RedisError, OSError):
                pass
            return
        self._counts.pop(key, None)

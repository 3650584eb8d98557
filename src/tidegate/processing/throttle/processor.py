"""`ThrottleProcessor`: a running Throttle built from a `ThrottleConfig` and a store."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from tidegate.processing.throttle.budget import ThrottleBudget
from tidegate.processing.throttle.clock import Clock, MonotonicClock
from tidegate.processing.throttle.config import ThrottleConfig
from tidegate.processing.throttle.counters import ThrottleCounters
from tidegate.processing.throttle.memory import MemoryThrottleState
from tidegate.processing.throttle.plan import EventPlan
from tidegate.processing.throttle.redis_store import RedisStore, RedisThrottleState

__all__ = ["ThrottleProcessor", "ThrottleResult"]


@dataclass(frozen=True, slots=True)
class ThrottleResult:
    """A decided batch: `passed` in input order, and `dropped` (the discarded events)."""

    passed: list[Any] = field(default_factory=list)
    dropped: list[Any] = field(default_factory=list)


class ThrottleProcessor:
    """Rate-limits a stream of events per the configuration.

    In memory (`store=None`) the processor is synchronous and can sit on the hot path
    (`process_sync`); on a `RedisStore` it is asynchronous. `await process(events)`
    works for both. Time is processing time from `clock` (default: a monotonic clock
    in memory, the Redis server's clock on Redis, so every worker shares one
    timeline), or event time when the configuration names a `time_field`.

    In memory, `budget` is the worker's shared `ThrottleBudget` (keys and bytes across
    all processors); without one the processor is bounded by its `max_keys` only.
    """

    DROPPED_OUTPUT: ClassVar[str] = "dropped"
    """Name of the second output that discarded events go to with `reroute_dropped`."""

    def __init__(
        self,
        config: ThrottleConfig,
        *,
        store: RedisStore | None = None,
        clock: Clock | None = None,
        budget: ThrottleBudget | None = None,
    ) -> None:
        self.config = config
        self.counters = ThrottleCounters()
        if config.discarded_per_key:
            self.counters.enable_per_key(config.discarded_per_key_limit)
        self._plan = EventPlan.from_config(config)
        self._event_time = config.time_field is not None
        self._memory: MemoryThrottleState | None = None
        self._redis: RedisThrottleState | None = None
        limits = {
            "threshold": config.threshold,
            "window_ms": config.window_ms,
            "max_keys": config.max_keys,
        }
        if store is None:
            self._memory = MemoryThrottleState(**limits, budget=budget)
            self._clock: Clock | None = clock if clock is not None else MonotonicClock()
        else:
            self._redis = RedisThrottleState(store, **limits)
            self._clock = clock

    @property
    def is_async(self) -> bool:
        """True on Redis: only `await process(...)` can decide events."""
        return self._redis is not None

    @property
    def routes_dropped(self) -> bool:
        """Whether `dropped` goes to the `dropped` output rather than being discarded."""
        return self.config.reroute_dropped

    @property
    def keys_tracked(self) -> int:
        return self.counters.keys_tracked

    @property
    def store(self) -> RedisStore | None:
        """The Redis store, or None in memory."""
        return None if self._redis is None else self._redis.store

    @property
    def memory_state(self) -> MemoryThrottleState | None:
        return self._memory

    def _now(self) -> int | None:
        if self._event_time or self._clock is None:
            return None
        return self._clock.now_ms()

    def process_sync(self, events: Iterable[Any]) -> ThrottleResult:
        """Decide a batch in memory, in order. Raises TypeError on a Redis store."""
        state = self._memory
        if state is None:
            raise TypeError("a Throttle on Redis is asynchronous: use `await process(events)`")
        passed, dropped = state.run(events, self._plan, self._now(), self.counters)
        return ThrottleResult(passed, dropped)

    def expire_idle(self) -> int:
        """In memory: observe the clock now and free idle keys; returns keys tracked.

        Deciding events frees idle keys already; this is for a quiet stream. On Redis,
        keys expire by themselves and this only returns the last count seen.
        """
        state = self._memory
        if state is not None:
            now = self._now()
            if now is not None:
                state.advance(now)
                state.budget.publish()
            self.counters.keys_tracked = state.keys_tracked
        return self.counters.keys_tracked

    def allow(self, event: Any) -> bool:
        """Decide one event in memory: True when it passes."""
        return bool(self.process_sync((event,)).passed)

    async def process(self, events: Sequence[Any]) -> ThrottleResult:
        """Decide a batch in order, in memory or on Redis (one round trip per batch)."""
        if self._redis is None:
            return self.process_sync(events)
        passed, dropped = await self._redis.run(events, self._plan, self._now(), self.counters)
        return ThrottleResult(passed, dropped)

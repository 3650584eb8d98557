"""Throttle state shared through Redis: same semantics as the in-memory state.

Every batch is one round trip: an EVALSHA of the script in `redis_script.py` (EVAL
when the server does not have it cached yet), which decides the whole batch
atomically, so any number of workers and hosts share each bucket exactly. Keys expire
by themselves shortly after their window empties. When Redis cannot be reached the
batch fails open (every event passes, counted) unless the store says fail closed.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from redis.asyncio import Redis
from redis.exceptions import NoScriptError, RedisError

from tidegate.processing.fields import MISSING
from tidegate.processing.throttle.counters import ThrottleCounters
from tidegate.processing.throttle.plan import DEFAULT_BUCKET, EventPlan, bucket_key
from tidegate.processing.throttle.redis_script import THROTTLE_SCRIPT, THROTTLE_SCRIPT_SHA

__all__ = ["DEFAULT_KEY_PREFIX", "RedisStore", "RedisThrottleState"]

logger = logging.getLogger("tidegate.processing.throttle")

DEFAULT_KEY_PREFIX: Final = "tidegate:throttle:{default}"
_MAX_PLAIN_KEY_BYTES: Final = 128
_LOG_EVERY_S: Final = 10.0


@dataclass(frozen=True, slots=True)
class RedisStore:
    """Where a Throttle processor keeps its windows on Redis, and how it behaves.

    `key_prefix` must be unique per processor and should contain a `{hash tag}` so
    that, on Redis Cluster, all keys of one processor live in one slot.
    """

    client: Redis
    key_prefix: str = DEFAULT_KEY_PREFIX
    fail_open: bool = True
    """When Redis is unreachable: pass every event (True) or discard them (False)."""
    max_batch: int = 10_000
    """Events decided per round trip; a longer batch takes several."""
    ttl_grace_ms: int = 60_000
    """Extra life given to keys beyond the end of their window (clock skew, replays)."""
    retry_after_ms: int = 1_000
    """After a failure, batches skip Redis (failing open or closed) for this long."""
    inline_limit_bytes: int = 4_096
    """A bucket whose runs outgrow this moves from the shared hash to a list of its own."""

    def __post_init__(self) -> None:
        if self.max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        if self.inline_limit_bytes < 0:
            raise ValueError("inline_limit_bytes must not be negative")
        if self.retry_after_ms < 0:
            raise ValueError("retry_after_ms must not be negative")
        if self.ttl_grace_ms < 0:
            raise ValueError("ttl_grace_ms must not be negative")
        if not self.key_prefix:
            raise ValueError("key_prefix must not be empty")


class RedisThrottleState:
    """The running state of one processor on a `RedisStore`."""

    __slots__ = (
        "_bucket_prefix",
        "_down_until",
        "_fixed_args",
        "_hash_key",
        "_index_key",
        "_last_log",
        "_tail_args",
        "_watermark_key",
        "keys_tracked",
        "store",
        "watermark",
    )

    def __init__(self, store: RedisStore, *, threshold: int, window_ms: int, max_keys: int):
        self.store = store
        prefix = store.key_prefix
        self._watermark_key = f"{prefix}:w"
        self._index_key = f"{prefix}:i"
        self._hash_key = f"{prefix}:h"
        self._bucket_prefix = f"{prefix}:l:"
        self._fixed_args = (window_ms, threshold, max_keys, store.ttl_grace_ms)
        self._tail_args = (
            store.inline_limit_bytes,
            len(self._bucket_prefix.encode("utf-8", "surrogatepass")),
        )
        self._last_log = -_LOG_EVERY_S
        self._down_until = -1.0
        self.keys_tracked = 0
        self.watermark = 0

    def redis_key(self, key: str) -> str:
        """The list key of bucket `key` once busy; its id is the part after the prefix.

        Keys longer than 128 bytes are identified by their SHA-256 instead.
        """
        try:
            if len(key.encode()) <= _MAX_PLAIN_KEY_BYTES:
                return f"{self._bucket_prefix}={key}"
        except UnicodeEncodeError:
            pass  # lone surrogates from JSON escapes: hash them like long keys
        digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
        return f"{self._bucket_prefix}#{digest}"

    async def run(
        self,
        events: Sequence[Any],
        plan: EventPlan,
        now_ms: int | None,
        counters: ThrottleCounters,
    ) -> tuple[list[Any], list[Any]]:
        """Decide a batch in order; `now_ms` None means Redis server time (or event time)."""
        passed: list[Any] = []
        dropped: list[Any] = []
        step = self.store.max_batch
        for start in range(0, len(events), step):
            await self._run_chunk(
                events[start : start + step], plan, now_ms, counters, passed, dropped
            )
        counters.events_in += len(events)
        counters.passed += len(passed)
        counters.discarded += len(dropped)
        counters.keys_tracked = self.keys_tracked
        return passed, dropped

    async def _run_chunk(
        self,
        events: Sequence[Any],
        plan: EventPlan,
        now_ms: int | None,
        counters: ThrottleCounters,
        passed: list[Any],
        dropped: list[Any],
    ) -> None:
        exclude = plan.exclude
        key_name = plan.key_name
        key_getter = plan.key_getter
        event_time = plan.event_time
        timed = event_time is not None
        mode = "e" if timed else ("s" if now_ms is None else "c")
        count_at = -2 if timed else -1  # where the open group's event count sits in args

        redis_keys: list[str] = [self._watermark_key, self._index_key, self._hash_key]
        key_index: dict[str, int] = {}
        group_keys: list[str] = []  # bucket key per group, for per-key counts
        args: list[Any] = [
            *self._fixed_args,
            mode,
            "" if now_ms is None else now_ms,
            *self._tail_args,
        ]
        slots: list[int] = []  # group of each event, -1 when excluded
        current_key: str | None = None
        current_time = 0
        group = -1
        excluded = 0
        time_missing = 0

        for event in events:
            if exclude is not None and exclude(event):
                slots.append(-1)
                excluded += 1
                continue
            if key_name is not None:
                key = bucket_key(event.get(key_name, MISSING))
            elif key_getter is not None:
                key = bucket_key(key_getter(event))
            else:
                key = DEFAULT_BUCKET
            at = 0
            if event_time is not None:
                read = event_time(event)
                if read is None:
                    time_missing += 1
                else:
                    at = read
            if key == current_key and at == current_time:
                args[count_at] += 1
            else:
                index = key_index.get(key)
                if index is None:
                    index = key_index[key] = len(redis_keys) + 1
                    redis_keys.append(self.redis_key(key))
                group += 1
                group_keys.append(key)
                if timed:
                    args += (index, 1, at)
                else:
                    args += (index, 1)
                current_key, current_time = key, at
            slots.append(group)

        counters.excluded += excluded
        counters.time_missing += time_missing
        if group < 0:
            passed.extend(events)
            return
        if self._down_until > time.monotonic():
            # Redis failed a moment ago: do not stall every batch on it.
            self._fail(events, slots, None, counters, passed, dropped)
            return
        try:
            reply = await self._evaluate(redis_keys, args)
        except (RedisError, OSError) as error:
            self._down_until = time.monotonic() + self.store.retry_after_ms / 1000
            self._fail(events, slots, error, counters, passed, dropped)
            return
        self.watermark = int(reply[0])
        self.keys_tracked = int(reply[1])
        remaining = [int(result) for result in reply[2:]]
        per_key = counters.discarded_by_key is not None
        over_cap = 0
        for event, slot in zip(events, slots, strict=True):
            if slot < 0:
                passed.append(event)
                continue
            left = remaining[slot]
            if left > 0:
                remaining[slot] = left - 1
                passed.append(event)
            elif left < 0:
                over_cap += 1
                passed.append(event)
            else:
                dropped.append(event)
                if per_key:
                    counters.count_discarded_key(group_keys[slot])
        counters.keys_over_cap += over_cap

    async def _evaluate(self, keys: list[str], args: list[Any]) -> list[Any]:
        client = self.store.client
        try:
            reply = await client.evalsha(THROTTLE_SCRIPT_SHA, len(keys), *keys, *args)
        except NoScriptError:
            reply = await client.eval(THROTTLE_SCRIPT, len(keys), *keys, *args)
        if not isinstance(reply, list) or len(reply) < 2:
            raise RedisError(f"unexpected reply from the throttle script: {reply!r}")
        return reply

    def _fail(
        self,
        events: Sequence[Any],
        slots: list[int],
        error: BaseException | None,
        counters: ThrottleCounters,
        passed: list[Any],
        dropped: list[Any],
    ) -> None:
        fail_open = self.store.fail_open
        if error is not None:
            counters.store_errors += 1
            now = time.monotonic()
            if now - self._last_log >= _LOG_EVERY_S:
                self._last_log = now
                logger.warning(
                    "Redis store unavailable (%s); failing %s",
                    error,
                    "open: events pass" if fail_open else "closed: events are discarded",
                )
        for event, slot in zip(events, slots, strict=True):
            if slot < 0 or fail_open:
                passed.append(event)
                if slot >= 0:
                    counters.failed_open += 1
            else:
                dropped.append(event)
                counters.failed_closed += 1

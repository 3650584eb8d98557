"""The Throttle processor: limits events per sliding window, per key.

Build a `ThrottleConfig` from the `user_config` (`ThrottleConfig.model_validate`), a
`ThrottleProcessor` from it (in memory, or with `store=RedisStore(...)`), then decide
batches with `await processor.process(events)` or, in memory, `process_sync(events)`;
both return a `ThrottleResult(passed, dropped)`.
"""

from tidegate.processing.throttle.budget import ThrottleBudget
from tidegate.processing.throttle.clock import (
    Clock,
    EventTimeReader,
    ManualClock,
    MonotonicClock,
    parse_event_time,
)
from tidegate.processing.throttle.config import (
    DEFAULT_MAX_KEYS,
    ThrottleConfig,
    WindowUnit,
    describe_validation_error,
    window_ms_from,
)
from tidegate.processing.throttle.counters import ThrottleCounters
from tidegate.processing.throttle.memory import MemoryThrottleState
from tidegate.processing.throttle.plan import DEFAULT_BUCKET, EventPlan, bucket_key
from tidegate.processing.throttle.processor import ThrottleProcessor, ThrottleResult
from tidegate.processing.throttle.redis_store import (
    DEFAULT_KEY_PREFIX,
    RedisStore,
    RedisThrottleState,
)

__all__ = [
    "DEFAULT_BUCKET",
    "DEFAULT_KEY_PREFIX",
    "DEFAULT_MAX_KEYS",
    "Clock",
    "EventPlan",
    "EventTimeReader",
    "ManualClock",
    "MemoryThrottleState",
    "MonotonicClock",
    "RedisStore",
    "RedisThrottleState",
    "ThrottleBudget",
    "ThrottleConfig",
    "ThrottleCounters",
    "ThrottleProcessor",
    "ThrottleResult",
    "WindowUnit",
    "bucket_key",
    "describe_validation_error",
    "parse_event_time",
    "window_ms_from",
]

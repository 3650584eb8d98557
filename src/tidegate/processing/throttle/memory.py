"""In-process throttle state: exact sliding windows in compact per-bucket arrays.

Time never goes back here: the state keeps a watermark, the highest time it has been
given, and judges every event at the watermark. A clock stepping back therefore
freezes time until it catches up; it can neither crash the state nor expire
admissions early.

Each bucket stores its admissions run-length encoded: admissions at the same
millisecond share one run, and only the newest run lives outside an `array('q')`.
So a bucket costs O(admissions still in its window) machine words at most, never a
Python object per admission. A heap ordered by each bucket's newest admission lets
the state drop a bucket the moment its window empties, so at every decision
`len(buckets)` is exactly the number of live keys and the key cap is exact.

Every state also charges a `ThrottleBudget` shared by all the processors of the worker
(keys and approximate bytes, see `budget.py`); past it, new keys are not tracked and a
tracked key's admission is folded into its newest run (both fail open).
"""

from __future__ import annotations

import weakref
from array import array
from collections.abc import Iterable
from heapq import heappop, heappush, heapreplace
from typing import Any

from tidegate.processing.throttle.budget import (
    ARRAY_BYTES,
    KEY_BYTES,
    RUN_BYTES,
    Charge,
    ThrottleBudget,
)
from tidegate.processing.throttle.counters import ThrottleCounters
from tidegate.processing.throttle.plan import DEFAULT_BUCKET, EventPlan, bucket_key

__all__ = ["MemoryThrottleState"]

# Compact a bucket's run array once this many slots at its front are dead.
_COMPACT_AFTER = 64


class _Bucket:
    """Admissions of one key still in the window.

    The newest run is `(last, total - closed)`; older runs are `(time, count)` pairs in
    `runs[head:]`, oldest first, and `runs` is None while there are none. `oldest` is
    the time of the oldest run held, so a full bucket is judged with one comparison.
    """

    __slots__ = ("closed", "head", "last", "oldest", "runs", "total")

    def __init__(self, now: int) -> None:
        self.last = now
        self.oldest = now
        self.total = 1
        self.closed = 0
        self.runs: array[int] | None = None
        self.head = 0

    def forget_before(self, cutoff: int) -> int:
        """Drop older runs at or before `cutoff` (the newest run is known to be live);
        returns the budget bytes freed."""
        runs = self.runs
        if runs is None:
            return 0
        start = head = self.head
        size = len(runs)
        dropped = 0
        while head < size and runs[head] <= cutoff:
            dropped += runs[head + 1]
            head += 2
        self.total -= dropped
        self.closed -= dropped
        freed = (head - start) // 2 * RUN_BYTES
        if head == size:
            self.runs = None
            self.oldest = self.last
            head = 0
            freed += ARRAY_BYTES
        else:
            self.oldest = runs[head]
            if head >= _COMPACT_AFTER and head * 2 >= size:
                del runs[:head]
                head = 0
        self.head = head
        return freed

    def charged(self, key: str) -> int:
        """The budget bytes this bucket holds under `key`."""
        runs = self.runs
        held = KEY_BYTES + len(key)
        if runs is not None:
            held += ARRAY_BYTES + (len(runs) - self.head) // 2 * RUN_BYTES
        return held

    def held(self) -> list[int]:
        """Admission times held, oldest first (for tests and debugging)."""
        times: list[int] = []
        runs = self.runs
        if runs is not None:
            for i in range(self.head, len(runs), 2):
                times.extend([runs[i]] * runs[i + 1])
        times.extend([self.last] * (self.total - self.closed))
        return times


class MemoryThrottleState:
    """Sliding-window state for one Throttle processor, in this process."""

    __slots__ = (
        "__weakref__",
        "_buckets",
        "_budget",
        "_charge",
        "_heap",
        "_watermark",
        "max_keys",
        "threshold",
        "window_ms",
    )

    def __init__(
        self,
        *,
        threshold: int,
        window_ms: int,
        max_keys: int,
        budget: ThrottleBudget | None = None,
    ) -> None:
        self.threshold = threshold
        self.window_ms = window_ms
        self.max_keys = max_keys
        self._buckets: dict[str, _Bucket] = {}
        # (newest admission when queued, key): never later than the bucket's `last`.
        self._heap: list[tuple[int, str]] = []
        self._watermark = 0
        self._charge = Charge()
        if budget is None:
            self._budget = ThrottleBudget.unlimited()
        else:
            self._budget = budget
            # A processor dropped by a recompile or an eviction gives its share back.
            weakref.finalize(self, budget.release, self._charge)

    @property
    def budget(self) -> ThrottleBudget:
        return self._budget

    @property
    def bytes_charged(self) -> int:
        return self._charge.bytes

    @property
    def keys_tracked(self) -> int:
        return len(self._buckets)

    @property
    def watermark(self) -> int:
        return self._watermark

    def held(self, key: str) -> list[int]:
        """Admission times of `key` still in the window (empty if untracked)."""
        bucket = self._buckets.get(key)
        if bucket is None:
            return []
        cutoff = self._watermark - self.window_ms
        return [at for at in bucket.held() if at > cutoff]

    def advance(self, now_ms: int) -> int:
        """Move the watermark to `now_ms` if later; free buckets whose window emptied."""
        if now_ms > self._watermark:
            self._watermark = now_ms
            self._sweep(now_ms - self.window_ms)
        return self._watermark

    def _sweep(self, cutoff: int) -> None:
        heap, buckets = self._heap, self._buckets
        freed_keys = freed_bytes = 0
        while heap and heap[0][0] <= cutoff:
            key = heap[0][1]
            bucket = buckets[key]
            if bucket.last <= cutoff:
                heappop(heap)
                del buckets[key]
                freed_keys += 1
                freed_bytes += bucket.charged(key)
            else:
                heapreplace(heap, (bucket.last, key))
        if freed_keys:
            self._uncharge(freed_keys, freed_bytes)

    def _uncharge(self, keys: int, size: int) -> None:
        charge, budget = self._charge, self._budget
        charge.keys -= keys
        charge.bytes -= size
        budget.keys -= keys
        budget.bytes -= size

    def run(
        self,
        events: Iterable[Any],
        plan: EventPlan,
        now_ms: int | None,
        counters: ThrottleCounters,
    ) -> tuple[list[Any], list[Any]]:
        """Decide a batch in order; returns (passed, dropped) and updates `counters`.

        `now_ms` is the processing time of the whole batch, or None in event-time mode.
        The watermark only moves when an event is decided: excluded events never
        touch the state.
        """
        if (
            now_ms is not None
            and plan.key_name is not None
            and plan.exclude is None
            and counters.discarded_by_key is None
        ):
            return self._run_keyed(events, plan.key_name, now_ms, counters)
        passed: list[Any] = []
        dropped: list[Any] = []
        to_passed = passed.append
        to_dropped = dropped.append
        buckets = self._buckets
        heap = self._heap
        budget = self._budget
        charge = self._charge
        threshold = self.threshold
        window = self.window_ms
        cap = self.max_keys
        key_name = plan.key_name
        key_getter = plan.key_getter
        exclude = plan.exclude
        event_time = plan.event_time
        per_key = counters.discarded_by_key is not None
        now = self._watermark
        cutoff = now - window
        # The clock counts as seen with the first event the state decides (like on
        # Redis, where a batch of only excluded events never reaches the store).
        unseen_now = now_ms
        seen = excluded = over_cap = time_missing = 0

        # One fused loop: this is the hot path, so no calls that can be avoided.
        for event in events:
            seen += 1
            if exclude is not None and exclude(event):
                to_passed(event)
                excluded += 1
                continue
            if unseen_now is not None:
                now = self.advance(unseen_now)
                cutoff = now - window
                unseen_now = None
            if event_time is not None:
                at = event_time(event)
                if at is None:
                    time_missing += 1
                elif at > now:
                    now = self.advance(at)
                    cutoff = now - window
            if key_name is not None:
                key = event.get(key_name)
                if key.__class__ is not str:
                    key = bucket_key(key)
            elif key_getter is not None:
                key = bucket_key(key_getter(event))
            else:
                key = DEFAULT_BUCKET
            bucket = buckets.get(key)
            if bucket is None:
                if len(buckets) >= cap:
                    over_cap += 1
                    to_passed(event)
                    continue
                size = KEY_BYTES + len(key)
                if budget.keys >= budget.max_keys or budget.bytes + size > budget.max_bytes:
                    over_cap += 1
                    budget.keys_refused += 1
                    to_passed(event)
                    continue
                buckets[key] = _Bucket(now)
                heappush(heap, (now, key))
                budget.keys += 1
                budget.bytes += size
                charge.keys += 1
                charge.bytes += size
                to_passed(event)
                continue
            if bucket.last == now:
                # Older runs were already forgotten at this very millisecond.
                if bucket.total < threshold:
                    bucket.total += 1
                    to_passed(event)
                    continue
            elif bucket.total < threshold or bucket.oldest <= cutoff:
                if bucket.oldest <= cutoff:
                    freed = bucket.forget_before(cutoff)
                    budget.bytes -= freed
                    charge.bytes -= freed
                if bucket.total < threshold:
                    if budget.bytes >= budget.max_bytes:
                        # No room for a new run: count it in the newest (fail open).
                        bucket.total += 1
                        budget.runs_folded += 1
                        to_passed(event)
                        continue
                    # Close the newest run and open one at `now` (inlined: hot path).
                    runs = bucket.runs
                    if runs is None:
                        bucket.runs = array("q", (bucket.last, bucket.total - bucket.closed))
                        bucket.head = 0
                        budget.bytes += ARRAY_BYTES + RUN_BYTES
                        charge.bytes += ARRAY_BYTES + RUN_BYTES
                    else:
                        runs.extend((bucket.last, bucket.total - bucket.closed))
                        budget.bytes += RUN_BYTES
                        charge.bytes += RUN_BYTES
                    bucket.closed = bucket.total
                    bucket.last = now
                    bucket.total += 1
                    to_passed(event)
                    continue
            to_dropped(event)
            if per_key:
                counters.count_discarded_key(key)

        counters.events_in += seen
        counters.passed += len(passed)
        counters.discarded += len(dropped)
        counters.excluded += excluded
        counters.keys_over_cap += over_cap
        counters.time_missing += time_missing
        counters.keys_tracked = len(buckets)
        budget.publish()
        return passed, dropped

    def _run_keyed(
        self,
        events: Iterable[Any],
        key_name: str,
        now_ms: int,
        counters: ThrottleCounters,
    ) -> tuple[list[Any], list[Any]]:
        """`run` for the commonest shape, processing time and a plain key field, with
        every check that shape does not need taken out of the loop. Same decisions."""
        if not isinstance(events, list | tuple):
            events = list(events)
        passed: list[Any] = []
        dropped: list[Any] = []
        if not events:
            counters.keys_tracked = len(self._buckets)
            return passed, dropped
        to_passed = passed.append
        to_dropped = dropped.append
        buckets = self._buckets
        heap = self._heap
        budget = self._budget
        charge = self._charge
        threshold = self.threshold
        cap = self.max_keys
        now = self.advance(now_ms)
        cutoff = now - self.window_ms
        over_cap = 0
        for event in events:
            key = event.get(key_name)
            if key.__class__ is not str:
                key = bucket_key(key)
            bucket = buckets.get(key)
            if bucket is None:
                if len(buckets) >= cap:
                    over_cap += 1
                else:
                    size = KEY_BYTES + len(key)
                    if budget.keys >= budget.max_keys or budget.bytes + size > budget.max_bytes:
                        over_cap += 1
                        budget.keys_refused += 1
                    else:
                        buckets[key] = _Bucket(now)
                        heappush(heap, (now, key))
                        budget.keys += 1
                        budget.bytes += size
                        charge.keys += 1
                        charge.bytes += size
                to_passed(event)
                continue
            if bucket.last == now:
                if bucket.total < threshold:
                    bucket.total += 1
                    to_passed(event)
                    continue
            elif bucket.total < threshold or bucket.oldest <= cutoff:
                if bucket.oldest <= cutoff:
                    freed = bucket.forget_before(cutoff)
                    budget.bytes -= freed
                    charge.bytes -= freed
                if bucket.total < threshold:
                    if budget.bytes >= budget.max_bytes:
                        # No room for a new run: count it in the newest (fail open).
                        bucket.total += 1
                        budget.runs_folded += 1
                        to_passed(event)
                        continue
                    runs = bucket.runs
                    if runs is None:
                        bucket.runs = array("q", (bucket.last, bucket.total - bucket.closed))
                        bucket.head = 0
                        budget.bytes += ARRAY_BYTES + RUN_BYTES
                        charge.bytes += ARRAY_BYTES + RUN_BYTES
                    else:
                        runs.extend((bucket.last, bucket.total - bucket.closed))
                        budget.bytes += RUN_BYTES
                        charge.bytes += RUN_BYTES
                    bucket.closed = bucket.total
                    bucket.last = now
                    bucket.total += 1
                    to_passed(event)
                    continue
            to_dropped(event)
        counters.events_in += len(events)
        counters.passed += len(passed)
        counters.discarded += len(dropped)
        counters.keys_over_cap += over_cap
        counters.keys_tracked = len(buckets)
        budget.publish()
        return passed, dropped

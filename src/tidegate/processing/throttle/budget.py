"""A server-wide budget for in-memory throttle state, shared by every processor.

`max_keys` of one processor is chosen by its tenant (up to 10 million), and a worker
runs the processors of every tenant, so per-processor caps alone do not bound a
worker's memory. One `ThrottleBudget` per worker process is handed to every in-memory
`ThrottleProcessor` (the runtime builds it from the settings); the states charge it for
each key they track and for each run of admissions they hold, and give the charge back
when a key's window empties or the processor is dropped.

Past either limit the throttle fails open, as the per-processor key cap already does:
a new key is not tracked (its event passes, counted in `keys_refused`), and an
admission of a tracked key that would need a new run is folded into the key's newest
run instead (it then leaves the window a little early; counted in `runs_folded`).
Memory therefore stays within the budget, and the limits are never stricter than
configured.

Bytes are an estimate calibrated with tracemalloc on CPython 3.11 (see the constants):
a tracked key, its heap entry and the key string, plus the run array of each key.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

__all__ = [
    "ARRAY_BYTES",
    "KEY_BYTES",
    "RUN_BYTES",
    "BudgetListener",
    "Charge",
    "ThrottleBudget",
]

KEY_BYTES: Final = 240
"""Per tracked key, plus the key's length: bucket object, dict entry, heap tuple and
its timestamp, the key string's header."""
ARRAY_BYTES: Final = 80
"""A key's run array, once it holds older runs."""
RUN_BYTES: Final = 24
"""Per older run held: two 8-byte slots plus the array's over-allocation."""

BudgetListener = Callable[[int, int, int, int], None]
"""Told the change since its last call: (keys, bytes, keys_refused, runs_folded)."""


class Charge:
    """What one state holds against the budget, given back when the state goes."""

    __slots__ = ("bytes", "keys")

    def __init__(self) -> None:
        self.keys = 0
        self.bytes = 0


class ThrottleBudget:
    """Keys and approximate bytes of in-memory throttle state in this process.

    The states update `keys`, `bytes`, `keys_refused` and `runs_folded` directly (they
    are on the hot path) and call `publish()` once per batch.
    """

    __slots__ = (
        "_listener",
        "_published",
        "bytes",
        "keys",
        "keys_refused",
        "max_bytes",
        "max_keys",
        "runs_folded",
    )

    def __init__(
        self, *, max_keys: int, max_bytes: int, listener: BudgetListener | None = None
    ) -> None:
        if max_keys < 1 or max_bytes < 1:
            raise ValueError("a throttle budget needs max_keys and max_bytes of at least 1")
        self.max_keys = max_keys
        self.max_bytes = max_bytes
        self.keys = 0
        self.bytes = 0
        self.keys_refused = 0
        self.runs_folded = 0
        self._listener = listener
        self._published = (0, 0, 0, 0)

    @classmethod
    def unlimited(cls) -> ThrottleBudget:
        """A private budget that never refuses (a processor built without one)."""
        return cls(max_keys=1 << 62, max_bytes=1 << 62)

    def has_room(self, key_bytes: int) -> bool:
        return self.keys < self.max_keys and self.bytes + key_bytes <= self.max_bytes

    @property
    def over_bytes(self) -> bool:
        return self.bytes >= self.max_bytes

    def release(self, charge: Charge) -> None:
        """Give back what a state holds (the state is gone or has been cleared)."""
        self.keys -= charge.keys
        self.bytes -= charge.bytes
        charge.keys = charge.bytes = 0
        self.publish()

    def publish(self) -> None:
        """Tell the listener what changed since the last call (nothing if nothing did)."""
        listener = self._listener
        if listener is None:
            return
        now = (self.keys, self.bytes, self.keys_refused, self.runs_folded)
        before = self._published
        if now != before:
            self._published = now
            listener(now[0] - before[0], now[1] - before[1], now[2] - before[2], now[3] - before[3])

    def snapshot(self) -> dict[str, int]:
        return {
            "keys": self.keys,
            "bytes": self.bytes,
            "max_keys": self.max_keys,
            "max_bytes": self.max_bytes,
            "keys_refused": self.keys_refused,
            "runs_folded": self.runs_folded,
        }

"""A plain, obviously correct model of the Throttle, to check the fast ones against.

One list of admission times per key, filtered afresh at every decision. Time is the
highest time seen so far (the watermark), so a clock stepping back freezes time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

PASS = "pass"
DROP = "drop"
OVER_CAP = "over_cap"


@dataclass
class ReferenceThrottle:
    threshold: int
    window_ms: int
    max_keys: int
    times: dict[str, list[int]] = field(default_factory=dict)
    watermark: int = 0

    def _expire(self) -> None:
        for key in list(self.times):
            live = [t for t in self.times[key] if t > self.watermark - self.window_ms]
            if live:
                self.times[key] = live
            else:
                del self.times[key]

    def offer(self, key: str, at: int | None) -> str:
        """Decide one event of bucket `key` at time `at` (None: at the watermark)."""
        if at is not None:
            self.watermark = max(self.watermark, at)
        self._expire()
        if key not in self.times:
            if len(self.times) >= self.max_keys:
                return OVER_CAP
            self.times[key] = [self.watermark]
            return PASS
        if len(self.times[key]) < self.threshold:
            self.times[key].append(self.watermark)
            return PASS
        return DROP

    def advance(self, at: int) -> None:
        self.watermark = max(self.watermark, at)
        self._expire()

    @property
    def keys_tracked(self) -> int:
        self._expire()
        return len(self.times)

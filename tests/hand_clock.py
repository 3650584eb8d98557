"""A wall clock in epoch milliseconds that a test moves by hand, for code that takes an
injected clock (tidegate.clock): what is due after a delay is checked without waiting
for it, and a slow machine cannot let a delay run out between two requests."""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class HandClock:
    now_ms: int = field(default_factory=lambda: time.time_ns() // 1_000_000)

    def __call__(self) -> int:
        return self.now_ms

    def move(self, seconds: float) -> None:
        self.now_ms += int(seconds * 1000)

"""The wall clock in epoch milliseconds: the one definition the package reads.

Code that must be testable takes a clock as an argument (a `Callable[[], int]` or an
object with `now_ms()`) and defaults to these, so a test moves a fake clock instead of
patching this module. Elapsed time is measured with `time.monotonic`, never with this.
"""

from __future__ import annotations

import time
from datetime import datetime

__all__ = ["WallClock", "epoch_ms_of", "now_ms"]


def now_ms() -> int:
    """The current wall-clock time in milliseconds since the Unix epoch."""
    return time.time_ns() // 1_000_000


def epoch_ms_of(moment: datetime) -> int:
    """``moment`` (timezone-aware) in milliseconds since the Unix epoch."""
    return int(moment.timestamp() * 1000)


class WallClock:
    """`now_ms` as an object, for code that takes a clock with a `now_ms()` method."""

    __slots__ = ()

    def now_ms(self) -> int:
        return now_ms()

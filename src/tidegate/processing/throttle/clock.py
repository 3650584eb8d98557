"""Clocks for the Throttle processor, in integer milliseconds.

Processing time comes from a monotonic clock; tests inject a `ManualClock` and move
it, backwards too. Event time is read from a field of each event (`EventTimeReader`).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any, Final, Protocol

from tidegate.processing.fields import MISSING, FieldPath

__all__ = ["Clock", "EventTimeReader", "ManualClock", "MonotonicClock", "parse_event_time"]


class Clock(Protocol):
    def now_ms(self) -> int:
        """The current time in milliseconds."""
        ...


class MonotonicClock:
    """Processing time: `time.monotonic_ns` in milliseconds (never steps back)."""

    __slots__ = ()

    def now_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000


class ManualClock:
    """A clock that only moves when told to; for tests and replays."""

    __slots__ = ("_now",)

    def __init__(self, start_ms: int = 0) -> None:
        self._now = start_ms

    def now_ms(self) -> int:
        return self._now

    def set(self, now_ms: int) -> None:
        self._now = now_ms

    def advance(self, delta_ms: int) -> None:
        """Move by `delta_ms`, which may be negative (a clock stepping back)."""
        self._now += delta_ms


_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MS: Final = timedelta(milliseconds=1)
# Timestamps beyond year 9999 in ms are nonsense; refuse them rather than overflow.
_MAX_EPOCH_MS: Final = 253_402_300_799_999


def parse_event_time(value: Any) -> int | None:
    """Epoch milliseconds from an event's timestamp, or None when it is not one.

    Accepts a JSON number of epoch milliseconds (fractions are truncated), a string of
    digits holding the same, or an RFC 3339 string with a time zone
    (`2024-05-01T12:00:00.250Z`, `2024-05-01T14:00:00+02:00`).
    """
    if value.__class__ is int:
        return value if -_MAX_EPOCH_MS <= value <= _MAX_EPOCH_MS else None
    if isinstance(value, float):
        if value != value or not -_MAX_EPOCH_MS <= value <= _MAX_EPOCH_MS:
            return None
        return int(value)
    if not isinstance(value, str) or not value:
        return None
    text = value.strip()
    if text.lstrip("-").isdigit():
        return parse_event_time(int(text))
    if len(text) < 20 or text[10] not in "Tt ":
        return None
    try:
        moment = datetime.fromisoformat(text.upper().replace(" ", "T", 1))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None  # RFC 3339 requires an offset; a naive time is ambiguous.
    return (moment - _EPOCH) // _ONE_MS


class EventTimeReader:
    """Reads event time from a field; remembers the last string parsed (they repeat)."""

    __slots__ = ("_get", "_last_ms", "_last_text", "path")

    def __init__(self, path: FieldPath) -> None:
        self.path = path
        self._get = path.getter()
        self._last_text: str | None = None
        self._last_ms: int | None = None

    def __call__(self, event: Any) -> int | None:
        value = self._get(event)
        if value is MISSING:
            return None
        if value.__class__ is str:
            if value == self._last_text:
                return self._last_ms
            parsed = parse_event_time(value)
            self._last_text, self._last_ms = value, parsed
            return parsed
        return parse_event_time(value)

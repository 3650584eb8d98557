"""The window logic of one alert channel: pure, with time passed in (tests move it).

Time is epoch milliseconds. A stored line counts at the time tidegate received it
(``received_ms``), so the answer does not depend on when the evaluator ran. The
evaluator feeds a channel its matching lines in id order (``on_line``) and tells it
how far time has certainly passed (``advance``): windows that ended by then close.

Presence (``triggerlimit`` lines within ``triggerinterval``): the first matching line
opens a window of one interval. ``immediate``: it fires when the limit is reached.
Otherwise (or also, with ``terminal``) it fires when the window ends, if the limit was
reached. The next matching line after the window opens the next one, so a channel
fires at most once per window per mode.

Absence: windows follow each other from the moment the channel was first evaluated;
a window that ends with fewer than ``triggerlimit`` lines fires. After a long pause
(the evaluator stopped, or nothing happened for several windows) the missed windows
fire once together, not once each.

Autoresolve: a channel that fired is *open*. Presence resolves when a full
``autoresolveinterval`` passes with fewer than ``autoresolvelimit`` matching lines;
absence resolves as soon as ``autoresolvelimit`` lines arrive within one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tidegate.alerts.channels import Channel
from tidegate.alerts.intervals import interval_ms
from tidegate.alerts.notification import MAX_MATCHES


@dataclass(slots=True)
class Firing:
    event: str  # "trigger" or "resolve"
    at_ms: int
    count: int
    matches: list[dict[str, Any]]


@dataclass(slots=True)
class WindowState:
    start: int | None = None
    count: int = 0
    fired: bool = False
    matches: list[dict[str, Any]] = field(default_factory=list)
    open: bool = False
    resolve_start: int | None = None
    resolve_count: int = 0

    def dump(self) -> dict[str, Any]:
        return {
            "start": self.start,
            "count": self.count,
            "fired": self.fired,
            "matches": self.matches,
            "open": self.open,
            "resolve_start": self.resolve_start,
            "resolve_count": self.resolve_count,
        }

    @classmethod
    def load(cls, data: dict[str, Any] | None) -> WindowState:
        return cls(**data) if data else cls()


def _scaled(interval: int, scale: float) -> int:
    return interval if scale == 1.0 else max(1, round(interval * scale))


def trigger_window_ms(channel: Channel, scale: float = 1.0) -> int:
    """How long a channel's trigger window is, as its state machine counts it."""
    return _scaled(interval_ms(channel.triggerinterval), scale)


class ChannelWindow:
    """One channel's state machine; ``firings`` collects what it decided."""

    def __init__(
        self, channel: Channel, state: WindowState, *, now_ms: int, scale: float = 1.0
    ) -> None:
        self.channel = channel
        self.state = state
        # ``scale``: the alert_window_scale setting (tests shorten windows with it).
        self.interval = trigger_window_ms(channel, scale)
        self.resolve_interval = (
            _scaled(interval_ms(channel.autoresolveinterval), scale) if channel.autoresolve else 0
        )
        self.firings: list[Firing] = []
        if channel.operator == "absence" and state.start is None:
            state.start = now_ms

    # Lines

    def on_line(self, at_ms: int, record: dict[str, Any]) -> None:
        self.advance(at_ms)
        if self.channel.operator == "absence":
            self._absence_line(at_ms, record)
        else:
            self._presence_line(at_ms, record)

    def _presence_line(self, at_ms: int, record: dict[str, Any]) -> None:
        state = self.state
        if state.open and self.resolve_interval:
            state.resolve_count += 1
        if state.start is None:
            state.start, state.count, state.fired, state.matches = at_ms, 0, False, []
        state.count += 1
        if len(state.matches) < MAX_MATCHES:
            state.matches.append(record)
        if self.channel.immediate and not state.fired and state.count >= self.channel.triggerlimit:
            state.fired = True
            self._fire(at_ms)

    def _absence_line(self, at_ms: int, record: dict[str, Any]) -> None:
        state = self.state
        state.count += 1
        if len(state.matches) < MAX_MATCHES:
            state.matches.append(record)
        if state.open and self.resolve_interval:
            if state.resolve_start is None:
                state.resolve_start, state.resolve_count = at_ms, 0
            state.resolve_count += 1
            if state.resolve_count >= self.channel.autoresolvelimit:
                self._resolve(at_ms)

    # Time

    def advance(self, now_ms: int) -> None:
        """Close what ended at or before ``now_ms``."""
        if self.channel.operator == "absence":
            self._absence_advance(now_ms)
        else:
            self._presence_advance(now_ms)
        self._resolve_advance(now_ms)

    def _presence_advance(self, now_ms: int) -> None:
        state = self.state
        if state.start is None or state.start + self.interval > now_ms:
            return
        end = state.start + self.interval
        if self.channel.fires_at_end and state.count >= self.channel.triggerlimit:
            self._fire(end)
        state.start, state.count, state.fired, state.matches = None, 0, False, []

    def _absence_advance(self, now_ms: int) -> None:
        state = self.state
        assert state.start is not None
        if state.start + self.interval > now_ms:
            return
        missed = (now_ms - state.start) // self.interval
        end = state.start + self.interval
        if state.count < self.channel.triggerlimit:
            self._fire(end)
        elif missed > 1:
            # The windows after the first ended empty.
            self.state.count, self.state.matches = 0, []
            self._fire(state.start + missed * self.interval)
        state.start += missed * self.interval
        state.count, state.matches = 0, []

    def _resolve_advance(self, now_ms: int) -> None:
        state = self.state
        if not (state.open and self.resolve_interval and state.resolve_start is not None):
            return
        if state.resolve_start + self.resolve_interval > now_ms:
            return
        if self.channel.operator == "absence":
            # Too few lines came back within it: start another resolve window.
            state.resolve_start, state.resolve_count = None, 0
            return
        if state.resolve_count < self.channel.autoresolvelimit:
            self._resolve(state.resolve_start + self.resolve_interval)
        else:
            state.resolve_start += self.resolve_interval
            state.resolve_count = 0

    # Decisions

    def _fire(self, at_ms: int) -> None:
        state = self.state
        self.firings.append(Firing("trigger", at_ms, state.count, list(state.matches)))
        if self.resolve_interval:
            state.open = True
            state.resolve_start = at_ms if self.channel.operator == "presence" else None
            state.resolve_count = 0

    def _resolve(self, at_ms: int) -> None:
        state = self.state
        self.firings.append(Firing("resolve", at_ms, state.resolve_count, []))
        state.open, state.resolve_start, state.resolve_count = False, None, 0

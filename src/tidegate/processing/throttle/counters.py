"""The Throttle processor's counters."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["ThrottleCounters"]


@dataclass(slots=True)
class ThrottleCounters:
    """Cumulative counts since the processor started, plus the `keys_tracked` gauge.

    `passed` counts every event sent to the main output: admitted, excluded, passed
    because its key was over the cap, or passed because the store failed open. So
    `events_in == passed + discarded`.
    """

    events_in: int = 0
    passed: int = 0
    discarded: int = 0
    excluded: int = 0
    keys_tracked: int = 0
    keys_over_cap: int = 0
    """Events of a new key that found no room under `max_keys` (they passed)."""
    time_missing: int = 0
    """Event-time mode: events without a usable timestamp (judged at the watermark)."""
    store_errors: int = 0
    """Redis store: batches that failed because Redis was unreachable or erred."""
    failed_open: int = 0
    failed_closed: int = 0
    discarded_by_key: dict[str, int] | None = None
    """Opt-in; the default bucket is reported under the empty string."""
    discarded_other_keys: int = 0
    """Discarded events of keys beyond the per-key limit."""
    per_key_limit: int = field(default=0, repr=False)

    def enable_per_key(self, limit: int) -> None:
        self.discarded_by_key = {}
        self.per_key_limit = limit

    def count_discarded_key(self, key: str, count: int = 1) -> None:
        by_key = self.discarded_by_key
        if by_key is None:
            return
        if key in by_key:
            by_key[key] += count
        elif len(by_key) < self.per_key_limit:
            by_key[key] = count
        else:
            self.discarded_other_keys += count

    def snapshot(self) -> dict[str, object]:
        """A plain dict for logs, `--stats` and metrics exporters."""
        data: dict[str, object] = {
            "events_in": self.events_in,
            "passed": self.passed,
            "discarded": self.discarded,
            "excluded": self.excluded,
            "keys_tracked": self.keys_tracked,
            "keys_over_cap": self.keys_over_cap,
            "time_missing": self.time_missing,
            "store_errors": self.store_errors,
            "failed_open": self.failed_open,
            "failed_closed": self.failed_closed,
        }
        if self.discarded_by_key is not None:
            data["discarded_by_key"] = dict(self.discarded_by_key)
            data["discarded_other_keys"] = self.discarded_other_keys
        return data

"""The platform's trigger intervals: wire text to seconds and back."""

from __future__ import annotations

from typing import Any

# Canonical wire text -> seconds. "30" is thirty seconds, the platform's shortest.
INTERVALS: dict[str, int] = {
    "30": 30,
    "1m": 60,
    "5m": 300,
    "15m": 900,
    "30m": 1800,
    "1h": 3600,
    "6h": 21600,
    "12h": 43200,
    "24h": 86400,
}
_BY_SECONDS = {seconds: text for text, seconds in INTERVALS.items()}
_ALIASES = {"30s": "30", "60": "1m", "60s": "1m", "1d": "24h"}


def canonical_interval(value: Any) -> str | None:
    """The canonical text of an interval given as text (``"5m"``) or seconds (``300``);
    None for anything else. Empty text is not an interval (the caller's default)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return _BY_SECONDS.get(int(value)) if float(value).is_integer() else None
    if not isinstance(value, str):
        return None
    text = value.strip().lower()
    text = _ALIASES.get(text, text)
    if text in INTERVALS:
        return text
    if text.isdigit():
        return _BY_SECONDS.get(int(text))
    return None


def interval_ms(text: str) -> int:
    return INTERVALS[text] * 1000

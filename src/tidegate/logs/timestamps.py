"""The one rule for a stored line's time, shared by every writer of lines (ingestion and
the pipeline's ``log_analysis`` destination) so the same input is never stored by one
and refused or replaced by the other.

A line's time is an epoch time, stored as milliseconds in ``[0, year 10000)``, given as

* a JSON number, or a string of ASCII digits (optionally with a fraction:
  ``"1700000000.5"``), in **seconds, milliseconds, microseconds or nanoseconds, told
  apart by magnitude** (``epoch_number``): below 10^11 it is seconds (the platform
  agent sends Rust's ``unix_timestamp()``), below 10^14 milliseconds (the logging
  libraries' ``Date.now()``), below 10^17 microseconds, below 10^20 nanoseconds. Each
  unit then covers 1970 to the year 5138, except that milliseconds before 1973-03-03
  read as seconds. A fraction below the millisecond is truncated;
* an ISO 8601 / RFC 3339 time (``2025-01-02T03:04:05.678Z``, ``+02:00``, a space for
  the ``T``); **a time without an offset is UTC** (winston's common
  ``format.timestamp({format: 'YYYY-MM-DD HH:mm:ss'})`` sends that).

Anything else (a negative or out-of-range number, NaN, a boolean, an object, text that is
not a time, superscript "digits" that ``str.isdigit`` accepts, thousands of digits that
``int()`` refuses) is not an error: the line falls back to the writer's default time
and the caller counts it (``lines_fallback`` in usage). A logging library never
retries a 400 and drops the whole batch on it, so one odd line must not cost its
neighbours.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Final

__all__ = [
    "CLOCK_TOLERANCE_MS",
    "MAX_TIMESTAMP_MS",
    "clock_skew",
    "epoch_ms",
    "epoch_number",
    "in_range",
    "iso_ms",
    "line_time",
    "rfc3339_ms",
    "text_time",
    "time_from",
]

# Year 10000: past it no date library can show the line.
MAX_TIMESTAMP_MS: Final = 253_402_300_800_000
# Below each bound a number is read in that unit (``epoch_number``): 10^11 seconds and
# 10^14 milliseconds are both the year 5138.
_SECONDS_BELOW: Final = 100_000_000_000
_MILLIS_BELOW: Final = 100_000_000_000_000
_MICROS_BELOW: Final = 100_000_000_000_000_000
_NANOS_BELOW: Final = 100_000_000_000_000_000_000
# ASCII only (``\d`` would take any Unicode digit); at most 20 integer digits (the
# nanoseconds' bound), so ``int()`` never sees thousands of digits. Fixed and linear.
_DIGITS: Final = re.compile(r"[0-9]{1,20}(?:\.[0-9]{0,9})?", re.ASCII)
# The longest ISO 8601 form ``fromisoformat`` reads is well under this; longer text is
# not a time and is never handed to the parser.
_MAX_ISO_CHARS: Final = 64


def in_range(millis: int) -> int | None:
    """``millis`` when it is an epoch millisecond in ``[0, year 10000)``, else None."""
    return millis if 0 <= millis < MAX_TIMESTAMP_MS else None


def rfc3339_ms(millis: int) -> str:
    """Epoch milliseconds as RFC 3339 UTC with milliseconds: ``2025-01-02T03:04:05.678Z``."""
    moment = datetime.fromtimestamp(millis // 1000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{millis % 1000:03d}Z"


def epoch_number(value: int | float | Decimal) -> int | None:
    """An epoch time given as a number, in seconds, milliseconds, microseconds or
    nanoseconds told apart by magnitude, as epoch milliseconds; None when it is negative,
    not finite or past the nanoseconds' bound. Every unit's result is below 10^14 ms
    (the year 5138), inside the stored range."""
    if value.__class__ is float and not math.isfinite(value):
        return None
    if value < 0:
        return None
    # Straight comparisons, milliseconds first: this runs for every line.
    if value < _MILLIS_BELOW:
        return int(value) if value >= _SECONDS_BELOW else int(value * 1000)
    if value < _MICROS_BELOW:
        return value // 1000 if value.__class__ is int else int(value / 1000)
    if value < _NANOS_BELOW:
        return value // 1_000_000 if value.__class__ is int else int(value / 1_000_000)
    return None


def epoch_ms(value: object) -> int | None:
    """``value`` as epoch milliseconds within range, or None when it is not a time."""
    if value.__class__ is int and _SECONDS_BELOW <= value < _MILLIS_BELOW:
        return value  # milliseconds: most lines, no call
    if value is None or value.__class__ is bool:
        return None
    if isinstance(value, (int, float)):
        return epoch_number(value)
    if not isinstance(value, str):
        return None
    text = value.strip()
    if not text or len(text) > _MAX_ISO_CHARS:
        return None
    if _DIGITS.fullmatch(text):
        # A fraction read exactly: float("1700000000.123") * 1000 may end in ...122.99.
        return epoch_number(Decimal(text) if "." in text else int(text))
    return iso_ms(text)


def iso_ms(text: str) -> int | None:
    """An ISO 8601 / RFC 3339 time (without an offset: UTC) as epoch milliseconds in
    range, or None when ``text`` is not one."""
    if len(text) > _MAX_ISO_CHARS or not text[:4].isascii() or not text[:4].isdigit():
        return None  # every ISO form starts with a four-digit year
    try:
        moment = datetime.fromisoformat(text.replace("z", "Z").replace("t", "T", 1))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        millis = (moment - _EPOCH) // _ONE_MS
    except OverflowError:
        return None
    return in_range(millis)


_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MS: Final = datetime.resolution * 1000


# The times a line's text holds, as the line parser knows them (``logs.parsing``,
# ``logs.server_formats``, ``logs.access_formats``), each a fixed shape tried whole on
# at most ``_MAX_ISO_CHARS`` characters: year first (ISO 8601 / RFC 3339 with ``T`` or a
# space, ``-`` or ``/`` between the date's parts, a ``,`` or ``.`` fraction, ``Z``, an
# offset or ``UTC``), day first (``22/Nov/2025:08:00:01 +0000``, ``22 Nov 2025
# 08:00:01.123``, ``22-Nov-2025 ...``) and syslog's year-less ``Nov 22 08:00:01``.
_YEAR_FIRST: Final = re.compile(
    r"(?P<y>[0-9]{4})[-/](?P<mo>[0-9]{2})[-/](?P<d>[0-9]{2})"
    r"(?:[T ](?P<h>[0-9]{2}):(?P<mi>[0-9]{2})(?::(?P<s>[0-9]{2})(?:[.,](?P<f>[0-9]{1,9}))?)?)?"
    r" ?(?P<z>Z|[+-][0-9]{2}(?::?[0-9]{2})?|UTC|GMT)?",
    re.ASCII | re.IGNORECASE,
)
_DAY_FIRST: Final = re.compile(
    r"(?P<d>[0-9]{1,2})[-/ ](?P<mon>[A-Za-z]{3})[-/ ](?P<y>[0-9]{4})[: ]"
    r"(?P<h>[0-9]{2}):(?P<mi>[0-9]{2}):(?P<s>[0-9]{2})(?:[.,](?P<f>[0-9]{1,9}))?"
    r"(?: ?(?P<z>Z|[+-][0-9]{2}:?[0-9]{2}|UTC|GMT))?",
    re.ASCII,
)
_SYSLOG: Final = re.compile(
    r"(?P<mon>[A-Za-z]{3}) {1,2}(?P<d>[0-9]{1,2}) "
    r"(?P<h>[0-9]{2}):(?P<mi>[0-9]{2}):(?P<s>[0-9]{2})(?:[.,](?P<f>[0-9]{1,9}))?",
    re.ASCII,
)
_MONTHS: Final = {
    name: number
    for number, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1
    )
}
_DAY_MS: Final = 86_400_000


def _offset_ms(zone: str | None) -> int:
    """Milliseconds east of UTC of ``Z``, ``UTC``, ``+02``, ``+0200``, ``+02:00``; none: UTC."""
    if zone is None or zone.upper() in ("Z", "UTC", "GMT"):
        return 0
    digits = zone[1:].replace(":", "")
    minutes = int(digits[:2]) * 60 + (int(digits[2:4]) if len(digits) > 2 else 0)
    return (-1 if zone[0] == "-" else 1) * minutes * 60_000


def _moment_ms(year: int, month: int, found: re.Match[str]) -> int | None:
    """The time of ``found``'s day, clock, fraction and zone in ``year`` and ``month``."""
    try:
        moment = datetime(
            year,
            month,
            int(found.group("d")),
            int(found.group("h") or 0),
            int(found.group("mi") or 0),
            int(found.group("s") or 0),
            tzinfo=UTC,
        )
    except ValueError:  # 31 November, 29 February of another year, hour 25, ...
        return None
    fraction = found.group("f")
    millis = (moment - _EPOCH) // _ONE_MS + (int(fraction[:3].ljust(3, "0")) if fraction else 0)
    groups = found.re.groupindex
    return in_range(millis - (_offset_ms(found.group("z")) if "z" in groups else 0))


def text_time(text: str, *, near_ms: int) -> int | None:
    """The time ``text`` (a time written in a line, captured by a parsing template) is,
    as epoch milliseconds, None when it is none of the forms the line parser knows
    (``_YEAR_FIRST``, ``_DAY_FIRST``, ``_SYSLOG``, or epoch digits read as ``epoch_ms``
    reads them). A time without an offset is UTC. Syslog's time has no year: it is given
    the year that puts it nearest ``near_ms`` (the line's time otherwise)."""
    text = text.strip()
    if not text or len(text) > _MAX_ISO_CHARS:
        return None
    if _DIGITS.fullmatch(text):
        return epoch_ms(text)
    found = _YEAR_FIRST.fullmatch(text)
    if found is not None:
        return _moment_ms(int(found.group("y")), int(found.group("mo")), found)
    found = _DAY_FIRST.fullmatch(text) or _SYSLOG.fullmatch(text)
    if found is None:
        return None
    month = _MONTHS.get(found.group("mon").lower())
    if month is None:
        return None
    if "y" in found.re.groupindex:
        return _moment_ms(int(found.group("y")), month, found)
    year = datetime.fromtimestamp(near_ms / 1000, UTC).year if in_range(near_ms) else 1970
    candidates = [
        millis
        for millis in (_moment_ms(year + step, month, found) for step in (-1, 0, 1))
        if millis is not None
    ]
    return min(candidates, key=lambda millis: abs(millis - near_ms), default=None)


def line_time(value: object, *, default: int) -> tuple[int, bool]:
    """The time to store for a line whose timestamp field holds ``value``, and whether
    it had to fall back to ``default`` (the request's ``now`` or the receive time).
    A missing timestamp (None) takes the default without counting as a fallback."""
    if value is None:
        return default, False
    parsed = epoch_ms(value)
    if parsed is None:
        return default, True
    return parsed, False


def time_from(
    item: Mapping[str, Any], fields: Sequence[str], *, default: int
) -> tuple[int, str | None, bool]:
    """The time of a line or event whose time may sit in any of ``fields`` (the
    protocol's names, in order of preference): the first of them holding a time wins.
    Returns the time, the field it came from (None when none did), and whether the
    line fell back to ``default`` although one of the fields held a value."""
    fell_back = False
    for name in fields:
        value = item.get(name)
        if value is None:
            continue
        parsed = epoch_ms(value)
        if parsed is not None:
            return parsed, name, False
        fell_back = True
    return default, None, fell_back


# Decision (docs/ingest.md): a sender whose ``now`` is within this of the receive time
# has a right clock (network, batching and the agent's whole seconds stay well inside).
CLOCK_TOLERANCE_MS: Final = 60_000


def clock_skew(*, sender_now: int | None, received_ms: int) -> int:
    """How far to move the times a sender gives so that they read on our clock: the
    receive time minus the sender's ``now`` when they differ by more than
    ``CLOCK_TOLERANCE_MS`` (the sender's clock is off), else 0."""
    if sender_now is None:
        return 0
    skew = received_ms - sender_now
    return skew if abs(skew) > CLOCK_TOLERANCE_MS else 0

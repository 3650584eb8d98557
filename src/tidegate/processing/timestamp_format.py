"""Times read with a ``strftime``-style format, as the platform's ``parse_timestamp``
reads them (Vector's VRL, which uses Rust's ``chrono`` specifiers).

``TimestampFormat("%a %d %b %T %Y")`` compiles the tenant's format once into an anchored
RE2 program (``linear_regex``): each specifier becomes a fixed piece of RE2 text and
every other character a literal, so reading a time is linear in the text whatever the
format, and Python's ``re`` never sees tenant text. ``read(text)`` answers an aware
``datetime`` or None.

The specifiers are chrono's: ``%Y %C %y %m %b %h %B %d %e %j %H %k %I %l %M %S %p %P
%f %.f %.3f %.6f %.9f %3f %6f %9f %z %:z %::z %#z %Z %s %a %A %u %w %U %W %V %G %g %n
%t %%`` and the composites ``%T %R %D %x %F %X %r %c %v %+``; padding flags (``%-d``,
``%_d``, ``%0d``) are accepted, and numbers may come with or without their padding. As
in chrono, a space in the format matches any run of whitespace (or none), a time
without an offset is UTC, ``%Z``'s name is read and not used (a zone name is not an
offset), and week-based specifiers are read and not used. A time needs a date: a year
with a month and day, or a day of the year, or ``%s``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Final

from tidegate.processing.linear_regex import CapturingRegex, RegexError

__all__ = ["MAX_FORMAT", "TimestampFormat", "TimestampFormatError", "rfc3339"]

MAX_FORMAT: Final = 256
"""Characters of a format."""
MAX_TEXT: Final = 256
"""Longer texts are not times."""

_MONTHS: Final = (
    "january", "february", "march", "april", "may", "june", "july", "august",
    "september", "october", "november", "december",
)  # fmt: skip
_MONTH_NUMBERS: Final = {month[:3]: number for number, month in enumerate(_MONTHS, 1)}
_DAYS: Final = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


# chrono reads a number after any whitespace, with 1 to its width of digits.
def _number(width: int) -> str:
    return rf"\s*\d{{1,{width}}}"


def _names(names: tuple[str, ...], *, short: bool) -> str:
    """Any of ``names`` in any case (and their first three letters when ``short``)."""
    words = [*names, *(name[:3] for name in names if short and len(name) > 3)]
    return "(?i:" + "|".join(words) + ")"


_YEAR = r"\s*(?:[+-]\d{1,9}|\d{1,4})"
_SHORT_MONTH = _names(tuple(month[:3] for month in _MONTHS), short=False)
_SHORT_DAY = _names(tuple(day[:3] for day in _DAYS), short=False)
_OFFSET = r"Z|[+-]\d{2}(?::?\d{2})?"
_FRACTION = r"\d{1,9}"
# Specifier -> (RE2 text of its value, what it sets).
_PIECES: Final[dict[str, tuple[str, str]]] = {
    "Y": (_YEAR, "year"),
    "C": (_number(2), "century"),
    "y": (_number(2), "year2"),
    "m": (_number(2), "month"),
    "b": (_SHORT_MONTH, "month_name"),
    "h": (_SHORT_MONTH, "month_name"),
    "B": (_names(_MONTHS, short=True), "month_name"),
    "d": (_number(2), "day"),
    "e": (_number(2), "day"),
    "j": (_number(3), "ordinal"),
    "H": (_number(2), "hour"),
    "k": (_number(2), "hour"),
    "I": (_number(2), "hour12"),
    "l": (_number(2), "hour12"),
    "M": (_number(2), "minute"),
    "S": (_number(2), "second"),
    "p": (r"(?i:am|pm)", "meridiem"),
    "P": (r"(?i:am|pm)", "meridiem"),
    "f": (_number(9), "nanoseconds"),
    "3f": (r"\d{3}", "fraction"),
    "6f": (r"\d{6}", "fraction"),
    "9f": (r"\d{9}", "fraction"),
    "z": (_OFFSET, "offset"),
    ":z": (_OFFSET, "offset"),
    "::z": (r"Z|[+-]\d{2}:?\d{2}:?\d{2}", "offset"),
    "#z": (_OFFSET, "offset"),
    "Z": (r"[A-Za-z][A-Za-z0-9_/+-]{0,31}", "zone"),
    "s": (r"\s*[+-]?\d{1,12}", "epoch"),
    "a": (_SHORT_DAY, "ignored"),
    "A": (_names(_DAYS, short=True), "ignored"),
    "u": (r"[1-7]", "ignored"),
    "w": (r"[0-6]", "ignored"),
    "U": (_number(2), "ignored"),
    "W": (_number(2), "ignored"),
    "V": (_number(2), "ignored"),
    "G": (_YEAR, "ignored"),
    "g": (_number(2), "ignored"),
}
# Dotted fractions: the dot is part of the specifier (``%.f``'s is optional, as in
# chrono): (RE2 before the value, the value, after it).
_DOTTED: Final[dict[str, tuple[str, str, str]]] = {
    ".f": (r"(?:\.", _FRACTION, ")?"),
    ".3f": (r"\.", r"\d{3}", ""),
    ".6f": (r"\.", r"\d{6}", ""),
    ".9f": (r"\.", r"\d{9}", ""),
}
_COMPOSITES: Final[dict[str, str]] = {
    "T": "%H:%M:%S",
    "R": "%H:%M",
    "D": "%m/%d/%y",
    "x": "%m/%d/%y",
    "F": "%Y-%m-%d",
    "X": "%H:%M:%S",
    "r": "%I:%M:%S %p",
    "c": "%a %b %e %H:%M:%S %Y",
    "v": "%e-%b-%Y",
    "+": "%Y-%m-%dT%H:%M:%S%.f%:z",
}
_LONGEST_SPECIFIER: Final = 3
_RE2_SPECIAL: Final = frozenset("\\.^$|?*+()[]{}")


class TimestampFormatError(ValueError):
    """A format that cannot be read with; the message says why, for a 400."""


@dataclass(frozen=True, slots=True)
class _Group:
    name: str
    sets: str


def _specifier(fmt: str, index: int) -> tuple[str, int]:
    """The specifier starting at ``fmt[index]`` (just after ``%``, flags skipped) and
    the index after it."""
    while index < len(fmt) and fmt[index] in "-_0":
        index += 1
    for width in range(_LONGEST_SPECIFIER, 0, -1):
        spec = fmt[index : index + width]
        if len(spec) == width and (
            spec in _PIECES or spec in _DOTTED or spec in _COMPOSITES or spec in ("n", "t", "%")
        ):
            return spec, index + width
    shown = fmt[index : index + 1] or "(end of the format)"
    raise TimestampFormatError(f"%{shown} is not a specifier this format language knows")


def _literal(char: str) -> str:
    if char.isspace():
        return r"\s*"
    return "\\" + char if char in _RE2_SPECIAL else char


def _compile(fmt: str, groups: list[_Group]) -> str:
    out: list[str] = []
    index = 0
    while index < len(fmt):
        char = fmt[index]
        if char != "%":
            out.append(_literal(char))
            index += 1
            continue
        spec, index = _specifier(fmt, index + 1)
        if spec in _COMPOSITES:  # made of plain specifiers only
            out.append(_compile(_COMPOSITES[spec], groups))
        elif spec in ("n", "t"):
            out.append(r"\s*")
        elif spec == "%":
            out.append("%")
        elif spec in _DOTTED:
            name = f"g{len(groups)}"
            groups.append(_Group(name, "fraction"))
            before, regex, after = _DOTTED[spec]
            out.append(f"{before}(?P<{name}>{regex}){after}")
        else:
            name = f"g{len(groups)}"
            regex, sets = _PIECES[spec]
            groups.append(_Group(name, sets))
            out.append(f"(?P<{name}>{regex})")
    return "".join(out)


class TimestampFormat:
    """A compiled format: ``read(text)`` is the time the whole text states, or None."""

    __slots__ = ("_groups", "_regex", "format")

    def __init__(self, fmt: str) -> None:
        if not fmt:
            raise TimestampFormatError("the format is empty")
        if len(fmt) > MAX_FORMAT:
            raise TimestampFormatError(f"the format is longer than {MAX_FORMAT} characters")
        self.format = fmt
        groups: list[_Group] = []
        regex = _compile(fmt, groups)
        sets = {group.sets for group in groups}
        dated = "epoch" in sets or (
            ("year" in sets or "year2" in sets)
            and ("ordinal" in sets or ({"month", "month_name"} & sets and "day" in sets))
        )
        if not dated:
            raise TimestampFormatError(
                "the format states no date: it needs a year with a month and a day "
                "(%Y-%m-%d, %F, %D), a year and a day of the year (%j), or %s"
            )
        try:
            self._regex = CapturingRegex(f"^(?:{regex})$")
        except RegexError as error:  # a literal RE2 cannot take (a lone surrogate)
            raise TimestampFormatError(f"the format does not compile: {error}") from None
        self._groups = tuple(groups)

    def read(self, text: str) -> datetime | None:
        if len(text) > MAX_TEXT:
            return None
        found = self._regex.named_groups(text)
        if found is None:
            return None
        values = {
            group.sets: value.strip()
            for group in self._groups
            if (value := found.get(group.name)) is not None
        }
        try:
            return _moment(values)
        except (ValueError, OverflowError):
            return None

    def __repr__(self) -> str:
        return f"TimestampFormat({self.format!r})"


def _year(values: dict[str, str]) -> int:
    if "year" in values:
        return int(values["year"])
    short = int(values["year2"])
    if "century" in values:
        return int(values["century"]) * 100 + short
    return (2000 if short < 70 else 1900) + short  # chrono's window: 1970-2069


def _month(values: dict[str, str]) -> int:
    if "month" in values:
        return int(values["month"])
    return _MONTH_NUMBERS[values["month_name"][:3].lower()]


def _offset(text: str) -> timezone:
    if text == "Z":
        return UTC
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    seconds = int(digits[:2]) * 3600 + int(digits[2:4] or 0) * 60 + int(digits[4:6] or 0)
    return timezone(sign * timedelta(seconds=seconds))


def _moment(values: dict[str, str]) -> datetime:
    if "nanoseconds" in values:
        micros = int(values["nanoseconds"]) // 1000
    else:
        micros = int(values.get("fraction", "0").ljust(6, "0")[:6])
    zone = _offset(values["offset"]) if "offset" in values else UTC
    if "epoch" in values:
        moment = datetime.fromtimestamp(int(values["epoch"]), UTC)
        return moment + timedelta(microseconds=micros)
    hour = int(values.get("hour", "0"))
    if "hour12" in values:
        hour = int(values["hour12"]) % 12
        if values.get("meridiem", "am").lower() == "pm":
            hour += 12
    second = min(int(values.get("second", "0")), 59)  # a leap second, as chrono reads it
    year = _year(values)
    if "day" in values and ("month" in values or "month_name" in values):
        month, mday = _month(values), int(values["day"])
    else:
        day = datetime(year, 1, 1, tzinfo=zone) + timedelta(days=int(values["ordinal"]) - 1)
        if day.year != year:
            raise ValueError("day of the year out of range")
        month, mday = day.month, day.day
    return datetime(
        year, month, mday, hour, int(values.get("minute", "0")), second, micros, tzinfo=zone
    )


def rfc3339(moment: datetime) -> str:
    """``2025-11-22T08:00:01.123Z``: UTC, with as many fraction digits as needed (0, 3
    or 6), as VRL writes a timestamp as JSON."""
    utc = moment.astimezone(UTC)
    text = (
        f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}"
        f"T{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}"
    )
    if utc.microsecond % 1000:
        text += f".{utc.microsecond:06d}"
    elif utc.microsecond:
        text += f".{utc.microsecond // 1000:03d}"
    return text + "Z"

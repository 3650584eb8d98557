"""Times read with chrono-style formats (``tidegate.processing.timestamp_format``), as
the platform's parse_timestamp reads them, and the formats refused with a reason."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from tidegate.processing.timestamp_format import (
    MAX_FORMAT,
    TimestampFormat,
    TimestampFormatError,
    rfc3339,
)


def at(*parts: int, offset_minutes: int = 0) -> datetime:
    return datetime(*parts, tzinfo=timezone(timedelta(minutes=offset_minutes)))  # type: ignore[misc]


@pytest.mark.parametrize(
    ("fmt", "text", "expected"),
    [
        # The provider's test formats.
        ("%a %d %b %T %Y", "Sat 22 Nov 08:00:01 2025", at(2025, 11, 22, 8, 0, 1)),
        ("%Y/%m/%d %H:%M:%S", "2025/11/22 08:00:01", at(2025, 11, 22, 8, 0, 1)),
        # Access logs, ISO 8601 / RFC 3339, fractions of every width.
        (
            "%d/%b/%Y:%T %z",
            "10/Oct/2000:13:55:36 -0700",
            at(2000, 10, 10, 13, 55, 36, offset_minutes=-420),
        ),
        (
            "%+",
            "2025-11-22T08:00:01.123456789+05:30",
            at(2025, 11, 22, 8, 0, 1, 123456, offset_minutes=330),
        ),
        ("%+", "2025-11-22T08:00:01Z", at(2025, 11, 22, 8, 0, 1)),
        ("%Y-%m-%dT%H:%M:%S%.3fZ", "2025-11-22T08:00:01.120Z", at(2025, 11, 22, 8, 0, 1, 120000)),
        ("%F %T%.f", "2025-11-22 08:00:01", at(2025, 11, 22, 8, 0, 1)),
        ("%F %H:%M:%S.%6f", "2025-11-22 08:00:01.000042", at(2025, 11, 22, 8, 0, 1, 42)),
        ("%F %T.%f", "2025-11-22 08:00:01.026490000", at(2025, 11, 22, 8, 0, 1, 26490)),
        ("%Y%m%d%H%M", "202511220805", at(2025, 11, 22, 8, 5)),
        ("%F %T %:z", "2025-11-22 08:00:01 +01:00", at(2025, 11, 22, 8, 0, 1, offset_minutes=60)),
        (
            "%F %T %::z",
            "2025-11-22 08:00:01 -00:30:00",
            at(2025, 11, 22, 8, 0, 1, offset_minutes=-30),
        ),
        # Epoch seconds, 12-hour clocks, two-digit years, day of the year, names.
        ("%s", "1700000000", at(2023, 11, 14, 22, 13, 20)),
        ("%s%.3f", "1700000000.250", at(2023, 11, 14, 22, 13, 20, 250000)),
        ("%D %r", "11/22/25 08:00:01 PM", at(2025, 11, 22, 20, 0, 1)),
        ("%m/%d/%y %l:%M %P", "01/02/69 12:05 am", at(2069, 1, 2, 0, 5)),
        ("%y-%m-%d", "70-01-02", at(1970, 1, 2)),
        ("%C%y %j", "2024 366", at(2024, 12, 31)),
        ("%A, %B %e, %Y", "Saturday, November  2, 2025", at(2025, 11, 2)),
        ("%c", "Sat Nov  2 08:00:01 2025", at(2025, 11, 2, 8, 0, 1)),
        ("%v %R", "2-Nov-2025 08:00", at(2025, 11, 2, 8, 0)),
        # A space matches any whitespace; a zone name is read, not used; 100% literal.
        ("%Y-%m-%d %H:%M %Z", "2025-11-22\t08:00 PST", at(2025, 11, 22, 8, 0)),
        ("%Y%m%d 100%% %-H:%M", "20251122 100% 8:05", at(2025, 11, 22, 8, 5)),
        ("%Y-%m-%d %H:%M:%S", "2016-12-31 23:59:60", at(2016, 12, 31, 23, 59, 59)),
        ("%G-W%V-%u %F", "2025-W47-6 2025-11-22", at(2025, 11, 22)),
        ("%F%t%T%n", "2025-11-22\t08:00:01\n", at(2025, 11, 22, 8, 0, 1)),
    ],
)
def test_formats_read_as_chrono_reads_them(fmt: str, text: str, expected: datetime) -> None:
    assert TimestampFormat(fmt).read(text) == expected


@pytest.mark.parametrize(
    ("fmt", "text"),
    [
        ("%Y-%m-%d", "2025-11-22 extra"),  # the whole text
        ("%Y-%m-%d", "2025-02-30"),  # no such day
        ("%Y %j", "2025 366"),
        ("%Y-%m-%d %H:%M", "2025-11-22 25:00"),
        ("%b %d %Y", "Foo 22 2025"),
        ("%Y-%m-%d", "x" * 300),
    ],
)
def test_texts_that_are_not_of_the_format(fmt: str, text: str) -> None:
    assert TimestampFormat(fmt).read(text) is None


@pytest.mark.parametrize(
    ("fmt", "says"),
    [
        ("", "empty"),
        ("%H:%M:%S", "states no date"),
        ("ISO8601", "states no date"),
        ("%Y-%m", "states no date"),
        ("%Q %Y", "%Q is not a specifier"),
        ("%Y-%m-%d %", "(end of the format)"),
        ("%Y" * (MAX_FORMAT // 2 + 1), "longer"),
        ("%Y-%m-%d\ud800", "does not compile"),
    ],
)
def test_refused_formats_say_why(fmt: str, says: str) -> None:
    with pytest.raises(TimestampFormatError, match=__import__("re").escape(says)):
        TimestampFormat(fmt)


def test_rfc3339_writes_utc_with_the_fraction_needed() -> None:
    assert rfc3339(at(2025, 11, 22, 8, 0, 1, offset_minutes=60)) == "2025-11-22T07:00:01Z"
    assert rfc3339(at(2025, 11, 22, 8, 0, 1, 120000)) == "2025-11-22T08:00:01.120Z"
    assert rfc3339(at(2025, 11, 22, 8, 0, 1, 42)) == "2025-11-22T08:00:01.000042Z"
    assert rfc3339(datetime(999, 1, 2, tzinfo=UTC)) == "0999-01-02T00:00:00Z"
    assert repr(TimestampFormat("%F")) == "TimestampFormat('%F')"

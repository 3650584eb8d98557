"""Issue 18: the one time rule (``logs.timestamps``) tells seconds, milliseconds,
microseconds and nanoseconds apart by magnitude, reads ISO 8601 times (an offset-less
one as UTC), and every writer of lines reads a value the same way: ingestion's line
objects (``timestamp`` and the agent payload's ``t``), the gateway's events, and the
sender's ``now``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.property_sizes import examples

from tidegate.ingest.service import IngestParams, build_line, check_params
from tidegate.logs.log_lines import event_to_line
from tidegate.logs.timestamps import (
    CLOCK_TOLERANCE_MS,
    MAX_TIMESTAMP_MS,
    clock_skew,
    epoch_ms,
    time_from,
)

# Every unit reads unambiguously from 1973-03-03 (10^11 ms) to the year 5138 (10^11 s).
FIRST_MS = 100_000_000_000
LAST_MS = 100_000_000_000_000 - 1
DEFAULT = 42
PARAMS = IngestParams(hostname="h")

moments = st.integers(min_value=FIRST_MS, max_value=LAST_MS)
below_ms = st.integers(min_value=0, max_value=999_999)


def _ingested(value: object, field: str = "timestamp") -> int:
    return build_line({"line": "x", field: value}, params=PARAMS, default_ts=DEFAULT, tags=None).ts


def _gateway(value: object) -> int:
    return event_to_line({"message": "x", "timestamp": value}, received_ms=DEFAULT).ts


def _everywhere(value: object) -> set[int]:
    """What each reader of a time makes of ``value``: they must agree."""
    parsed = epoch_ms(value)
    return {
        DEFAULT if parsed is None else parsed,
        _ingested(value),
        _ingested(value, "t"),
        _gateway(value),
        time_from({"ts": value}, ("ts",), default=DEFAULT)[0],
    }


@settings(max_examples=examples(200))
@given(millis=moments, extra=below_ms)
def test_each_unit_is_read_by_magnitude_the_same_everywhere(millis: int, extra: int) -> None:
    seconds = millis // 1000
    assert _everywhere(seconds) == {seconds * 1000}
    assert _everywhere(str(seconds)) == {seconds * 1000}
    assert _everywhere(millis) == {millis}
    assert _everywhere(str(millis)) == {millis}
    micros = millis * 1000 + extra % 1000
    assert _everywhere(micros) == {millis}
    assert _everywhere(str(micros)) == {millis}
    nanos = millis * 1_000_000 + extra
    assert _everywhere(nanos) == {millis}
    assert _everywhere(str(nanos)) == {millis}


@settings(max_examples=examples(200))
@given(millis=moments)
def test_fractional_seconds_keep_their_milliseconds(millis: int) -> None:
    seconds, fraction = divmod(millis, 1000)
    text = f"{seconds}.{fraction:03d}"
    assert _everywhere(text) == {millis}
    # A float (Python's time.time()) is within a millisecond: binary fractions.
    (got,) = _everywhere(float(text))
    assert abs(got - millis) <= 1


@settings(max_examples=examples(200))
@given(
    # A day short of the year 10000, so every offset can still write it.
    millis=st.integers(min_value=0, max_value=MAX_TIMESTAMP_MS - 86_400_001),
    offset_minutes=st.integers(min_value=-14 * 60, max_value=14 * 60),
    separator=st.sampled_from(["T", " "]),
)
def test_iso_times_with_and_without_an_offset(
    millis: int, offset_minutes: int, separator: str
) -> None:
    moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=millis)
    zone = moment.astimezone(timezone(timedelta(minutes=offset_minutes)))
    with_offset = zone.isoformat(sep=separator, timespec="milliseconds")
    assert _everywhere(with_offset) == {millis}
    # An offset-less time is UTC (winston's 'YYYY-MM-DD HH:mm:ss').
    naive = moment.replace(tzinfo=None).isoformat(sep=separator, timespec="milliseconds")
    assert _everywhere(naive) == {millis}
    assert _everywhere(naive[:19]) == {millis - millis % 1000}


@pytest.mark.parametrize(
    "value",
    [-1, -5000, 10**20, 1e300, float("nan"), True, "", "yesterday", "\u00b2", "9" * 21, {}],
)
def test_what_is_not_a_time_falls_back_everywhere(value: object) -> None:
    assert _everywhere(value) == {DEFAULT}


@settings(max_examples=examples(100))
@given(millis=moments)
def test_the_senders_now_is_read_by_the_same_rule(millis: int) -> None:
    for text in (str(millis // 1000), str(millis), str(millis * 1000), str(millis * 1_000_000)):
        params = check_params(hostname="h", mac=None, ip=None, now=text, tags=())
        expected = millis if text != str(millis // 1000) else millis - millis % 1000
        assert params.now == expected


@settings(max_examples=examples(100))
@given(
    received=moments,
    drift=st.integers(min_value=-10 * 365 * 86_400_000, max_value=10 * 365 * 86_400_000),
)
def test_the_clock_skew_is_the_drift_past_the_tolerance(received: int, drift: int) -> None:
    skew = clock_skew(sender_now=received - drift, received_ms=received)
    assert skew == (drift if abs(drift) > CLOCK_TOLERANCE_MS else 0)
    assert clock_skew(sender_now=None, received_ms=received) == 0


@settings(max_examples=examples(100))
@given(sent=moments, drift=st.integers(min_value=CLOCK_TOLERANCE_MS + 1, max_value=10**12))
def test_a_line_from_a_sender_whose_clock_is_off_is_moved_by_the_skew(
    sent: int, drift: int
) -> None:
    line = build_line(
        {"line": "x", "timestamp": sent // 1000},
        params=PARAMS,
        default_ts=DEFAULT,
        tags=None,
        skew=drift,
    )
    assert line.ts == sent - sent % 1000 + drift

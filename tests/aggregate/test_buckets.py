"""The histogram's bucket width: the smallest nice width that covers the range in at
most the buckets asked for, aligned to multiples of itself."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.property_sizes import examples

from tidegate.aggregate.service import (
    DAY_MS,
    HOUR_MS,
    MINUTE_MS,
    NICE_WIDTHS_MS,
    SECOND_MS,
    WEEK_MS,
    bucket_count,
    bucket_width,
)
from tidegate.export.schemas import MAX_EPOCH_MS

DAY_START = 1_763_769_600_000  # 2025-11-22T00:00:00Z
HOUR_START = DAY_START + 8 * HOUR_MS
NOT_ALIGNED = 1_763_800_000_000  # 2025-11-22T08:26:40Z


@pytest.mark.parametrize(
    ("from_ms", "to_ms", "buckets", "width", "count"),
    [
        # An hour from a whole minute: 60 one-minute buckets.
        (HOUR_START, HOUR_START + HOUR_MS - 1, 60, MINUTE_MS, 60),
        # The same hour from 40 s past a minute touches 61 minutes: 5-minute buckets.
        (NOT_ALIGNED, NOT_ALIGNED + HOUR_MS - 1, 60, 5 * MINUTE_MS, 13),
        (HOUR_START, HOUR_START, 60, SECOND_MS, 1),
        (HOUR_START, HOUR_START + 59_999, 60, SECOND_MS, 60),
        (HOUR_START, HOUR_START + 60_000, 60, 5 * SECOND_MS, 13),
        (DAY_START, DAY_START + 7 * DAY_MS - 1, 60, 3 * HOUR_MS, 56),
        (DAY_START, DAY_START + 7 * DAY_MS - 1, 500, 30 * MINUTE_MS, 336),
        (DAY_START, DAY_START + 30 * DAY_MS - 1, 60, 12 * HOUR_MS, 60),
        (DAY_START, DAY_START + 90 * DAY_MS - 1, 60, 7 * DAY_MS, 14),
        # Past a week: multiples of a week (epoch day 0 was a Thursday; so are buckets).
        (0, 420 * DAY_MS - 1, 10, 6 * WEEK_MS, 10),
        (0, MAX_EPOCH_MS, 500, 838 * WEEK_MS, 500),
        # One bucket for a millisecond either side of a week boundary: two weeks.
        (WEEK_MS - 1, WEEK_MS, 1, 2 * WEEK_MS, 1),
    ],
)
def test_chosen_width(from_ms: int, to_ms: int, buckets: int, width: int, count: int) -> None:
    assert bucket_width(from_ms, to_ms, buckets) == width
    assert bucket_count(from_ms, to_ms, width) == count


@settings(max_examples=examples(300))
@given(
    from_ms=st.integers(min_value=0, max_value=MAX_EPOCH_MS),
    span=st.one_of(
        st.integers(min_value=0, max_value=10 * DAY_MS),
        st.integers(min_value=0, max_value=MAX_EPOCH_MS),
    ),
    buckets=st.integers(min_value=1, max_value=500),
)
def test_the_width_is_the_smallest_that_fits(from_ms: int, span: int, buckets: int) -> None:
    to_ms = min(MAX_EPOCH_MS, from_ms + span)
    width = bucket_width(from_ms, to_ms, buckets)
    assert bucket_count(from_ms, to_ms, width) <= buckets
    smaller = [nice for nice in NICE_WIDTHS_MS if nice < width]
    if width > WEEK_MS:
        assert width % WEEK_MS == 0
        weeks = width // WEEK_MS
        smaller += [k * WEEK_MS for k in range(max(2, weeks - 2_000), weeks)]
    else:
        assert width in NICE_WIDTHS_MS
    for candidate in smaller:
        assert bucket_count(from_ms, to_ms, candidate) > buckets, candidate

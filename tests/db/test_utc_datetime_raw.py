"""``UTCDateTime.read_raw`` (the raw reads' datetime reader) gives what the ORM gives,
``process_result_value`` of the driver's value, for SQLite's naive text (read in one
parse), text with an offset of its own, a bare date, and asyncpg's aware datetimes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy.dialects import sqlite

from tidegate.models.base import UTCDateTime

TEXTS = [
    "2026-11-28 06:41:06.123456",
    "2026-11-28 06:41:06",
    "2026-11-28",
    "2026-11-28T06:41:06+02:00",
    "2026-11-28 06:41:06.5-05:30",
    "2026-11-28T06:41:06Z",
    "2026-11-28 06:41:06+00:00",
]


@pytest.mark.parametrize("text", TEXTS)
def test_text_reads_as_the_orm_reads_it(text: str) -> None:
    expected = UTCDateTime().process_result_value(datetime.fromisoformat(text), sqlite.dialect())
    found = UTCDateTime.read_raw(text)
    assert found == expected
    assert found is not None
    assert found.tzinfo is UTC


@pytest.mark.parametrize(
    "value",
    [
        datetime(2026, 11, 28, 6, 41, 6, tzinfo=UTC),
        datetime(2026, 11, 28, 6, 41, 6, tzinfo=timezone(timedelta(hours=-3))),
        datetime(2026, 11, 28, 6, 41, 6, tzinfo=UTC).replace(tzinfo=None),  # naive
    ],
)
def test_datetimes_read_as_the_orm_reads_them(value: datetime) -> None:
    found = UTCDateTime.read_raw(value)
    assert found == UTCDateTime().process_result_value(value, sqlite.dialect())
    assert found is not None
    assert found.tzinfo is UTC


def test_null_is_none() -> None:
    assert UTCDateTime.read_raw(None) is None

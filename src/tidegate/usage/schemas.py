"""Parameters and answers of the usage API (v1 shares of lines, v2 bytes).

Query parameters arrive as text and are parsed here, so every mistake is a 400 in the
legacy shape naming the parameter.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Annotated, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from tidegate.clock import epoch_ms_of
from tidegate.errors import BadRequest
from tidegate.export.schemas import bounded_int, epoch_ms

Kind: TypeAlias = Literal["apps", "hosts", "tags"]
DAY_MS = 86_400_000
DEFAULT_DAYS = 30
MAX_DAYS = 366
DEFAULT_LIMIT = 50  # the platform's usage dashboard keeps the top 50 per kind
MAX_LIMIT = 1000


class ShareOfLines(BaseModel):
    """v1: one app, host or tag and its share of the lines in the period."""

    name: str
    percentage: Annotated[
        float, Field(description="Share of the account's lines in the period, 0 to 100")
    ]
    lines: int


class BytesOf(BaseModel):
    name: str
    total_bytes: int


class AccountBytes(BaseModel):
    plan_bytes: Annotated[int, Field(description="Bytes stored in the period")]
    restored_bytes: Annotated[int, Field(description="Always 0: tidegate restores no archives")]


class UsageV2(BaseModel):
    from_: Annotated[str, Field(alias="from", description="Start (exclusive), RFC 3339")]
    to: Annotated[str, Field(description="End (exclusive), RFC 3339")]


class AccountUsageV2(UsageV2):
    results: AccountBytes


class KindUsageV2(UsageV2):
    results: list[BytesOf]


class NameUsageV2(UsageV2):
    results: BytesOf


@dataclass(frozen=True, slots=True)
class Period:
    """Milliseconds ``from_ms <= t < to_ms``."""

    from_ms: int
    to_ms: int

    @property
    def first_day(self) -> date:
        return datetime.fromtimestamp(self.from_ms / 1000, tz=UTC).date()

    @property
    def last_day(self) -> date:
        return datetime.fromtimestamp((self.to_ms - 1) / 1000, tz=UTC).date()


def v1_period(from_: str | None, to: str | None, *, now_ms: int) -> Period:
    """v1: epoch seconds or milliseconds (inclusive); ``to`` defaults to now and
    ``from`` to 30 days before ``to``."""
    to_ms = epoch_ms(to, name="to", end=True) if to and to.strip() else now_ms
    from_ms = (
        epoch_ms(from_, name="from", end=False)
        if from_ and from_.strip()
        else max(0, to_ms - DEFAULT_DAYS * DAY_MS)
    )
    if from_ms > to_ms:
        raise BadRequest("from: must not be after to")
    return Period(from_ms, to_ms + 1)


def _day(raw: str, *, name: str) -> date:
    text = raw.strip()
    if text.isdigit():  # epoch seconds or milliseconds, as elsewhere in the API
        return datetime.fromtimestamp(epoch_ms(text, name=name, end=False) / 1000, tz=UTC).date()
    try:
        if len(text) == 10:
            return date.fromisoformat(text)
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise BadRequest(f"{name}: an ISO 8601 date-time, a date, or epoch s/ms") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).date()


def v2_period(from_: str | None, to: str | None, *, today: date) -> Period:
    """v2: whole UTC days, as on the platform: ``from`` and ``to`` name the first and
    the last day (their time of day is not used). Defaults: the 30 days up to today."""
    last = _day(to, name="to") if to and to.strip() else today
    first = _day(from_, name="from") if from_ and from_.strip() else last - timedelta(days=29)
    if first > last:
        raise BadRequest("from: must not be after to")
    if (last - first).days >= MAX_DAYS:
        raise BadRequest(f"from: at most {MAX_DAYS} days per request")
    start = datetime(first.year, first.month, first.day, tzinfo=UTC)
    from_ms = epoch_ms_of(start)
    return Period(from_ms, from_ms + ((last - first).days + 1) * DAY_MS)


def rfc3339(ms: int) -> str:
    moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def limit(raw: str | None) -> int:
    return bounded_int(raw, name="limit", low=1, high=MAX_LIMIT, default=DEFAULT_LIMIT)


# GET /v1/usage: the account's counters per UTC day, written by ingestion.

LinesFallback = Annotated[
    int,
    Field(
        description=(
            "Lines stored or excluded only after a repair (a timestamp replaced by the "
            "default time, a non-text field coerced, a field truncated or dropped)"
        )
    ),
]


class DayUsage(BaseModel):
    day: date
    lines_stored: int
    bytes_stored: int
    lines_excluded: int
    bytes_excluded: int
    lines_fallback: LinesFallback


class UsageTotals(BaseModel):
    lines_stored: int
    bytes_stored: int
    lines_excluded: int
    bytes_excluded: int
    lines_fallback: LinesFallback


class Usage(BaseModel):
    """Per UTC day, every day of the range (days with nothing are zeros)."""

    from_: Annotated[date, Field(alias="from")]
    to: date
    days: list[DayUsage]
    totals: UsageTotals

    model_config = ConfigDict(populate_by_name=True)

"""Export v2 parameters and answer.

Query parameters arrive as text and are parsed here, so every mistake is a 400 in the
legacy shape with a sentence naming the parameter.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from tidegate.errors import BadRequest
from tidegate.logs.filtering import LineFilter, parse_line_filter
from tidegate.logs.timestamps import iso_ms

MIN_SIZE = 1
MAX_SIZE = 10_000
DEFAULT_SIZE = 10_000
# Epoch values below this are seconds, at or above it milliseconds: 1e11 seconds is
# the year 5138, 1e11 milliseconds is 3 March 1973.
MS_THRESHOLD = 100_000_000_000
MAX_EPOCH_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z

Prefer = Literal["head", "tail"]


class ExportPage(BaseModel):
    lines: list[dict[str, Any]] = Field(
        description="Line records: `_id`, `_ts` (epoch ms), `_host`, `_app`, `level`, "
        "`_env`, `_file`, `_ip`, `_mac`, `_tag`, `_meta`, `_line`; absent fields are left out"
    )
    pagination_id: str | None = Field(
        description="Send it back (with the same parameters) for the next page; null on "
        "the last page. A page may hold fewer lines than `size`, even none, and still "
        "not be the last."
    )


class LineContext(BaseModel):
    line: dict[str, Any] = Field(description="The line asked for, a line record as in `lines`")
    before: list[dict[str, Any]] = Field(
        description="The lines just before it from the same host and app, oldest first"
    )
    after: list[dict[str, Any]] = Field(
        description="The lines just after it from the same host and app, oldest first"
    )
    more_before: bool = Field(description="Whether there are older lines of that host and app")
    more_after: bool = Field(description="Whether there are newer lines of that host and app")


@dataclass(frozen=True, slots=True)
class ExportRequest:
    from_ms: int
    to_ms: int
    size: int
    prefer: Prefer
    line_filter: LineFilter
    pagination_id: str | None

    def fingerprint(self) -> str:
        """What a cursor is bound to: every parameter that decides which lines the
        export holds and in which order (not ``size``, which may change between pages)."""
        selected = self.line_filter
        canonical = json.dumps(
            [
                self.from_ms,
                self.to_ms,
                sorted(selected.hosts),
                sorted(selected.apps),
                sorted(selected.levels),
                selected.query_text,
                sorted(selected.tags),
                self.prefer,
            ],
            separators=(",", ":"),
        )
        return hashlib.sha256(canonical.encode()).hexdigest()[:32]


def epoch_ms(raw: str | None, *, name: str, end: bool) -> int:
    """Epoch seconds or milliseconds as milliseconds, or an ISO 8601 time (read by the
    one time rule: without an offset it is UTC). A ``to`` in seconds covers its whole
    second (``to=1700000000`` includes 1700000000999)."""
    if raw is None or not raw.strip():
        raise BadRequest(f"{name}: required (epoch seconds or milliseconds)")
    try:
        value = int(raw.strip())
    except ValueError:
        iso = iso_ms(raw.strip())
        if iso is None:
            raise BadRequest(
                f"{name}: must be epoch seconds or milliseconds, or an ISO 8601 time"
            ) from None
        return iso
    if value < 0:
        raise BadRequest(f"{name}: must not be negative")
    if value < MS_THRESHOLD:
        value = value * 1000 + (999 if end else 0)
    if value > MAX_EPOCH_MS:
        raise BadRequest(f"{name}: out of range")
    return value


def time_range(from_: str | None, to: str | None) -> tuple[int, int]:
    """``from`` and ``to`` (both required, inclusive) as milliseconds; ``from`` after
    ``to`` is a 400."""
    from_ms = epoch_ms(from_, name="from", end=False)
    to_ms = epoch_ms(to, name="to", end=True)
    if from_ms > to_ms:
        raise BadRequest("from: must not be after to")
    return from_ms, to_ms


def bounded_int(raw: str | None, *, name: str, low: int, high: int, default: int) -> int:
    """An optional integer parameter from ``low`` to ``high``; absent or empty: ``default``."""
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        value = low - 1
    if not low <= value <= high:
        raise BadRequest(f"{name}: must be an integer from {low} to {high}")
    return value


def parse_export_request(
    *,
    from_: str | None,
    to: str | None,
    size: str | None,
    hosts: str | None,
    apps: str | None,
    levels: str | None,
    query: str | None,
    prefer: str | None,
    pagination_id: str | None,
    tags: str | None = None,
) -> ExportRequest:
    from_ms, to_ms = time_range(from_, to)
    return ExportRequest(
        from_ms=from_ms,
        to_ms=to_ms,
        size=bounded_int(size, name="size", low=MIN_SIZE, high=MAX_SIZE, default=DEFAULT_SIZE),
        prefer=parse_prefer(prefer),
        line_filter=parse_line_filter(
            hosts=hosts, apps=apps, levels=levels, query=query, tags=tags
        ),
        pagination_id=pagination_id.strip() if pagination_id and pagination_id.strip() else None,
    )


def parse_prefer(raw: str | None) -> Prefer:
    chosen = (raw or "tail").strip().lower()
    if chosen not in ("head", "tail"):
        raise BadRequest("prefer: must be head or tail")
    return "head" if chosen == "head" else "tail"


# Export v1's ``size``: the plan's cap (tidegate.export.service.v1_line_cap) bounds it;
# asking for more is answered with the cap, as the platform's "capped by plan" says.
MAX_V1_SIZE_PARAM = 1_000_000
_TRUE = frozenset({"true", "1", "yes"})
_FALSE = frozenset({"false", "0", "no", ""})


@dataclass(frozen=True, slots=True)
class ExportV1Request:
    export: ExportRequest  # its ``size`` is set per scan
    size: int | None  # None: the plan's cap
    as_json: bool


def flag(raw: str | None, *, name: str) -> bool:
    value = (raw or "").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise BadRequest(f"{name}: must be true or false")


def parse_export_v1_request(
    *,
    from_: str | None,
    to: str | None,
    size: str | None,
    hosts: str | None,
    apps: str | None,
    levels: str | None,
    tags: str | None,
    query: str | None,
    prefer: str | None,
    json_: str | None,
    now_ms: int,
) -> ExportV1Request:
    """Export v1's parameters. ``from`` and ``to`` are optional (the platform's CLI sends
    neither when no time is given): ``to`` defaults to now, ``from`` to the beginning
    of the retained lines."""
    has_from = from_ is not None and from_.strip() != ""
    has_to = to is not None and to.strip() != ""
    from_ms = epoch_ms(from_, name="from", end=False) if has_from else 0
    to_ms = epoch_ms(to, name="to", end=True) if has_to else now_ms
    if from_ms > to_ms:
        raise BadRequest("from: must not be after to")
    sized = bounded_int(size, name="size", low=MIN_SIZE, high=MAX_V1_SIZE_PARAM, default=0) or None
    export = ExportRequest(
        from_ms=from_ms,
        to_ms=to_ms,
        size=MAX_SIZE,
        prefer=parse_prefer(prefer),
        line_filter=parse_line_filter(
            hosts=hosts, apps=apps, levels=levels, query=query, tags=tags
        ),
        pagination_id=None,
    )
    return ExportV1Request(export=export, size=sized, as_json=flag(json_, name="json"))

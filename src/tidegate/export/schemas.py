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
                self.prefer,
            ],
            separators=(",", ":"),
        )
        return hashlib.sha256(canonical.encode()).hexdigest()[:32]


def epoch_ms(raw: str | None, *, name: str, end: bool) -> int:
    """Epoch seconds or milliseconds as milliseconds. A ``to`` in seconds covers its
    whole second (``to=1700000000`` includes 1700000000999)."""
    if raw is None or not raw.strip():
        raise BadRequest(f"{name}: required (epoch seconds or milliseconds)")
    try:
        value = int(raw.strip())
    except ValueError:
        raise BadRequest(f"{name}: must be an integer (epoch seconds or milliseconds)") from None
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
) -> ExportRequest:
    from_ms, to_ms = time_range(from_, to)
    chosen = (prefer or "tail").strip().lower()
    if chosen not in ("head", "tail"):
        raise BadRequest("prefer: must be head or tail")
    return ExportRequest(
        from_ms=from_ms,
        to_ms=to_ms,
        size=bounded_int(size, name="size", low=MIN_SIZE, high=MAX_SIZE, default=DEFAULT_SIZE),
        prefer="head" if chosen == "head" else "tail",
        line_filter=parse_line_filter(hosts=hosts, apps=apps, levels=levels, query=query),
        pagination_id=pagination_id.strip() if pagination_id and pagination_id.strip() else None,
    )

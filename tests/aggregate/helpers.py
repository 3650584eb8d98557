"""What an aggregation should answer, computed from the stored lines with the Python
matcher (the definition of what a query selects)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import httpx

from tidegate.aggregate.service import bucket_count, bucket_width
from tidegate.logs.filtering import LineFilter, parse_line_filter
from tidegate.logs.store import NewLine

HOUR_MS = 3_600_000
# 2025-11-22T08:00:00Z, the lines' own times (``ts``); the default range is this hour.
HOUR_START = 1_763_798_400_000


async def aggregate(
    client: httpx.AsyncClient, headers: dict[str, str], **params: Any
) -> httpx.Response:
    params.setdefault("from", HOUR_START)
    params.setdefault("to", HOUR_START + HOUR_MS - 1)
    clean = {name: value for name, value in params.items() if value is not None}
    return await client.get("/v1/aggregate", params=clean, headers=headers)


def _top(counts: Counter[str], limit: int) -> list[dict[str, Any]]:
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:limit]
    return [{"value": value, "count": count} for value, count in ranked]


def expected(
    lines: Sequence[NewLine],
    *,
    from_ms: int,
    to_ms: int,
    buckets: int = 60,
    top: int = 10,
    counted_from: int | None = None,
    line_filter: LineFilter | None = None,
    **filters: str | None,
) -> dict[str, Any]:
    """The answer for ``lines`` (those stored for the account), with the filter of
    ``hosts``/``apps``/``levels``/``query`` given as ``filters``."""
    if line_filter is None:
        line_filter = parse_line_filter(
            hosts=filters.get("hosts"),
            apps=filters.get("apps"),
            levels=filters.get("levels"),
            query=filters.get("query"),
        )
    start = from_ms if counted_from is None else counted_from
    width = bucket_width(from_ms, to_ms, buckets)
    first = from_ms // width
    histogram = [0] * bucket_count(from_ms, to_ms, width)
    values: dict[str, Counter[str]] = {"host": Counter(), "app": Counter(), "level": Counter()}
    for item in lines:
        if not start <= item.ts <= to_ms:
            continue
        if not line_filter.matches(
            line=item.line,
            host=item.host,
            app=item.app,
            level=item.level,
            file=item.file,
            meta=item.meta,
        ):
            continue
        histogram[item.ts // width - first] += 1
        for name, value in (("host", item.host), ("app", item.app), ("level", item.level)):
            if value is not None:
                values[name][value.casefold()] += 1
    return {
        "from": from_ms,
        "to": to_ms,
        "bucket_ms": width,
        "total": sum(histogram),
        "histogram": [
            {"ts": (first + index) * width, "count": count} for index, count in enumerate(histogram)
        ],
        "top": {name: _top(counts, top) for name, counts in values.items()},
        "exact": start == from_ms,
        "counted_from": start,
    }

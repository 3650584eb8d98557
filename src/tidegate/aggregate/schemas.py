"""Aggregation parameters and answer.

The range and the filter are the export's (tidegate.export.schemas, parsed the same
way, with the same 400s naming the parameter); ``buckets`` and ``top`` say how much of
the answer to give.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from tidegate.export.schemas import bounded_int, time_range
from tidegate.logs.filtering import LineFilter, parse_line_filter

DEFAULT_BUCKETS = 60
MAX_BUCKETS = 500
DEFAULT_TOP = 10
MAX_TOP = 100
# The fields whose most frequent values an aggregation counts, as the answer names them.
TOP_FIELDS = ("host", "app", "level")


@dataclass(frozen=True, slots=True)
class AggregateRequest:
    from_ms: int
    to_ms: int
    buckets: int
    top: int
    line_filter: LineFilter


def parse_aggregate_request(
    *,
    from_: str | None,
    to: str | None,
    hosts: str | None,
    apps: str | None,
    levels: str | None,
    query: str | None,
    buckets: str | None,
    top: str | None,
) -> AggregateRequest:
    from_ms, to_ms = time_range(from_, to)
    return AggregateRequest(
        from_ms=from_ms,
        to_ms=to_ms,
        buckets=bounded_int(
            buckets, name="buckets", low=1, high=MAX_BUCKETS, default=DEFAULT_BUCKETS
        ),
        top=bounded_int(top, name="top", low=0, high=MAX_TOP, default=DEFAULT_TOP),
        line_filter=parse_line_filter(hosts=hosts, apps=apps, levels=levels, query=query),
    )


class Bucket(BaseModel):
    ts: int = Field(description="Start of the bucket, epoch ms (a multiple of `bucket_ms`)")
    count: int = Field(description="Matching lines with `ts <= _ts < ts + bucket_ms`")


class TopValue(BaseModel):
    value: str = Field(description="The field's value, case-folded (as `hosts=` matches it)")
    count: int = Field(description="Matching lines with this value")


class TopValues(BaseModel):
    host: list[TopValue] = Field(description="Most frequent first; ties in value order")
    app: list[TopValue] = Field(description="Lines without an app are not counted here")
    level: list[TopValue] = Field(description="Lines without a level are not counted here")


class Aggregation(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
        json_schema_extra={
            "examples": [
                {
                    "from": 1763800000000,
                    "to": 1763803599999,
                    "bucket_ms": 60000,
                    "total": 1234,
                    "histogram": [
                        {"ts": 1763799960000, "count": 12},
                        {"ts": 1763800020000, "count": 0},
                        {"ts": 1763800080000, "count": 31},
                    ],
                    "top": {
                        "host": [{"value": "web-1", "count": 800}],
                        "app": [{"value": "api", "count": 700}, {"value": "web", "count": 500}],
                        "level": [{"value": "error", "count": 1234}],
                    },
                    "exact": True,
                    "counted_from": 1763800000000,
                }
            ]
        },
    )

    from_ms: int = Field(alias="from", description="Start of the range, epoch ms (inclusive)")
    to: int = Field(description="End of the range, epoch ms (inclusive)")
    bucket_ms: int = Field(
        description="Width of a bucket: the smallest of 1 s, 5 s, 10 s, 30 s, 1 min, 5 min, "
        "10 min, 30 min, 1 h, 3 h, 6 h, 12 h, 1 day, 7 days, or a multiple of 7 days, that "
        "covers the range in at most `buckets` buckets"
    )
    total: int = Field(description="Matching lines counted (the sum of the histogram)")
    histogram: list[Bucket] = Field(
        description="Every bucket from the one holding `from` to the one holding `to`, "
        "oldest first, empty ones included. The first and last may start before `from` "
        "or end after `to`; only lines within the range are counted."
    )
    top: TopValues = Field(
        description="The most frequent values of host, app and level (empty lists for `top=0`)"
    )
    exact: bool = Field(
        description="True: every matching line of the range is counted. False: the query "
        "needed more lines checked than one request may check; the counts cover the lines "
        "from `counted_from` to `to` only (narrow the range or the query)"
    )
    counted_from: int = Field(
        description="Lines from this time (epoch ms) to `to` are counted: `from` when "
        "`exact`, later otherwise"
    )

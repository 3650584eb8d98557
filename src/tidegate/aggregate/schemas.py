"""Aggregation parameters and answer.

The range and the filter are the export's (tidegate.export.schemas, parsed the same
way, with the same 400s naming the parameter); ``buckets`` and ``top`` say how much of
the answer to give.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from tidegate.errors import BadRequest
from tidegate.export.schemas import bounded_int, time_range
from tidegate.logs.filtering import LineFilter, parse_line_filter
from tidegate.search.compiler import BUILTIN_FIELDS

DEFAULT_BUCKETS = 60
MAX_BUCKETS = 500
DEFAULT_TOP = 10
MAX_TOP = 100
# The fields whose most frequent values an aggregation counts, as the answer names them.
TOP_FIELDS = ("host", "app", "level")
# Other fields (parsed from the lines, or sent in meta) one request may ask the top
# values of, and the longest name.
MAX_EXTRA_FIELDS = 5
MAX_FIELD_NAME = 256


@dataclass(frozen=True, slots=True)
class AggregateRequest:
    from_ms: int
    to_ms: int
    buckets: int
    top: int
    line_filter: LineFilter
    # Fields beyond host, app and level whose top values are wanted (``fields=``).
    fields: tuple[str, ...] = ()


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
    fields: str | None = None,
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
        fields=parse_fields(fields),
    )


def parse_fields(raw: str | None) -> tuple[str, ...]:
    """``fields=status,user.id``: field names as a query names them (a dotted path into
    the line's fields and meta), in order, each once; host, app and level are always
    counted and are not repeated here."""
    if not raw:
        return ()
    names = tuple(
        dict.fromkeys(
            name
            for name in (item.strip() for item in raw.split(","))
            if name and name not in TOP_FIELDS
        )
    )
    if len(names) > MAX_EXTRA_FIELDS:
        raise BadRequest(f"fields: at most {MAX_EXTRA_FIELDS} fields")
    for name in names:
        if len(name) > MAX_FIELD_NAME or not name.isprintable():
            raise BadRequest(
                f"fields: a field name is at most {MAX_FIELD_NAME} printable characters"
            )
        if name in BUILTIN_FIELDS:
            raise BadRequest(f"fields: {name} is a built-in field without top values")
    return names


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
    fields: dict[str, list[TopValue]] | None = Field(
        default=None,
        description="Only with `fields=`: for each field it names (fields parsed from the "
        "lines, or sent in their meta), its most frequent values as text, case-folded; "
        "lines without it are not counted, and an array counts each of its values",
    )


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


class FieldPath(BaseModel):
    path: list[str] = Field(description="The keys down to a scalar value in the lines' meta")
    lines: int = Field(description="How many of the sampled lines hold it")


class FieldPaths(BaseModel):
    paths: list[FieldPath] = Field(description="The most frequent first, at most 200")
    sampled: int = Field(description="How many of the range's newest lines were read")

"""Request and response models of a running pipeline's live tap and usage metrics."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from tidegate.api.request_model import RequestModel
from tidegate.kit.tap import MAIN_OUTPUT, MAX_STREAM_RATE

TapFilter = Annotated[
    str | dict[str, Any] | None,
    Field(
        description="A string: events whose JSON contains it (any case); an object: a "
        "condition (`{logical_operation, expressions}` or one `{field, str_operator, "
        "value}`), as in filters"
    ),
]


TapOutput = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=200,
        description=f"One output of the component: `{MAIN_OUTPUT}`, or a named output (a "
        "route's output names and `_unmatched`, a throttle's `dropped`), wired to another "
        "node or not. Absent: its main output and the named outputs other nodes read",
    ),
]


class TapRequest(RequestModel):
    limit: Annotated[int, Field(ge=1, le=100, description="At most this many events")] = 10
    timeout: Annotated[
        float, Field(gt=0, le=20, description="Seconds to wait for them (at most 20)")
    ] = 5
    filter: TapFilter = None
    output: TapOutput = None


class TapStreamRequest(RequestModel):
    rate: Annotated[
        int,
        Field(
            ge=1,
            le=MAX_STREAM_RATE,
            description="At most this many events a second; those over it are counted "
            "(`event: skipped`), not sent",
        ),
    ] = 50
    filter: TapFilter = None
    output: TapOutput = None


class TapResult(BaseModel):
    pipeline_id: str
    component_id: str
    events: list[Any] = Field(description="What passed the component (its output), in order")
    count: int
    timed_out: bool = Field(description="The timeout passed before `limit` events came")


Traffic = Literal["ingress", "egress", "both"]


class UsagePoint(BaseModel):
    pipeline_id: str
    component_id: str
    bucket: datetime = Field(description="Start of the time bucket (UTC)")
    bucket_ms: int = Field(description="The same, epoch milliseconds")
    ingress_events: int | None = Field(description="Events into the component (null: not asked)")
    ingress_bytes: int | None
    egress_events: int | None = Field(description="Events out of it (null: not asked)")
    egress_bytes: int | None

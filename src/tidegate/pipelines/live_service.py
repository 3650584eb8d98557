"""A running pipeline seen from outside: the live tap (a round, or a stream) and usage
metrics. No HTTP.

The tap waits without holding a database session: ownership is checked first, in a
short read, then the request only waits on the worker's tap registry. A stream
re-checks its credential as live tail's do (``tail.service.TailCredential``).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from sqlalchemy import BigInteger, bindparam, func, select

from tidegate.components.validation import node_outputs
from tidegate.db.engine import Database, RawQuery
from tidegate.errors import ErrorItem, NotFound, RateLimited, ValidationFailed
from tidegate.kit.tap import MAIN_OUTPUT, TapBusy, TapRegistry, compile_filter
from tidegate.models import PipelineNode, PipelineUsage, PublishedPipelineNode
from tidegate.models.pipeline_usage import BUCKET_MS
from tidegate.pipelines import live_schemas as schemas
from tidegate.pipelines import repository
from tidegate.pipelines.service import config_of
from tidegate.processing.conditions import ConditionError
from tidegate.tail.service import (
    DISCONNECT_CHECK_SECONDS,
    HEARTBEAT_SECONDS,
    Revoked,
    TailCredential,
)

MAX_BUCKETS: Final = 10_000
DEFAULT_SPAN_MS: Final = 3_600_000
BUCKET_NAMES: Final = {"minute": 60, "hour": 3_600, "day": 86_400}


def _check_filter(spec: Any) -> None:
    try:
        compile_filter(spec)
    except ConditionError as error:
        message = f"invalid filter: {error}"
        raise ValidationFailed(
            message,
            context="body",
            errors=[ErrorItem(keyword="filter", message=message, instance_path="/filter")],
        ) from None


async def check_tapped(
    *,
    db: Database,
    account_id: str,
    pipeline_id: str,
    component_id: str,
    body: schemas.TapRequest | schemas.TapStreamRequest,
) -> None:
    """The body's filter is valid, the component is in the account's pipeline (its draft
    or its published revision) and the body's ``output`` one of its outputs there, or
    this raises the error to answer."""
    output = body.output
    _check_filter(body.filter)
    async with db.read_sessions() as session:
        pipeline = await repository.pipeline(
            session=session, account_id=account_id, pipeline_id=pipeline_id
        )
        if pipeline is None:
            raise NotFound(f"No pipeline {pipeline_id}")
        draft = await repository.nodes_of(session=session, pipeline_id=pipeline.id)
        published = await repository.published_nodes_of(session=session, pipeline_id=pipeline.id)
        nodes: list[PipelineNode | PublishedPipelineNode] = [*draft, *published]
        tapped = [node for node in nodes if node.id == component_id]
        if not tapped:
            raise NotFound(f"No component {component_id} in this pipeline")
        if output is None or output == MAIN_OUTPUT:
            return
        names = {
            name
            for node in tapped
            for name in node_outputs(
                kind=node.kind, type_=node.type, user_config=config_of(session, node)
            )
        }
    if output not in names:
        known = ", ".join(sorted({MAIN_OUTPUT, *names}))
        message = f"no output {output!r} of this component (it has: {known})"
        raise ValidationFailed(
            message,
            context="body",
            errors=[ErrorItem(keyword="output", message=message, instance_path="/output")],
        )


async def tap(
    *,
    db: Database,
    taps: TapRegistry,
    account_id: str,
    pipeline_id: str,
    component_id: str,
    body: schemas.TapRequest,
) -> schemas.TapResult:
    await check_tapped(
        db=db,
        account_id=account_id,
        pipeline_id=pipeline_id,
        component_id=component_id,
        body=body,
    )
    try:
        events, timed_out = await taps.capture(
            pipeline_id=pipeline_id,
            component_id=component_id,
            limit=body.limit,
            timeout_s=body.timeout,
            filter_spec=body.filter,
            output=body.output,
        )
    except TapBusy as error:
        raise RateLimited(str(error), headers={"Retry-After": "1"}) from None
    return schemas.TapResult(
        pipeline_id=pipeline_id,
        component_id=component_id,
        events=events,
        count=len(events),
        timed_out=timed_out,
    )


@dataclass(frozen=True, slots=True)
class Opened:
    """The tap is open: events passing from now on reach the stream (with Redis, those of
    other workers from when the announcement reaches them, a moment later)."""


@dataclass(frozen=True, slots=True)
class Caught:
    """Events that passed the tapped component (their JSON), and how many more passed
    that the stream did not carry since the previous ``Caught`` (over its rate, or
    while its reader was behind)."""

    events: list[bytes]
    skipped: int


@dataclass(frozen=True, slots=True)
class Quiet:
    """Nothing for ``HEARTBEAT_SECONDS``."""


TapEvent = Opened | Caught | Quiet | Revoked


async def stream_tap(
    *,
    taps: TapRegistry,
    credential: TailCredential,
    pipeline_id: str,
    component_id: str,
    body: schemas.TapStreamRequest,
    gone: Callable[[], Awaitable[bool]],
) -> AsyncIterator[TapEvent]:
    """What passes the component, until the reader is ``gone()``, the credential no
    longer reads the account or manages it (a ``Revoked`` ends the stream), or the
    server stops. Raises ``TapBusy`` before the first event when it cannot open."""
    async with taps.stream(
        account_id=credential.account_id,
        pipeline_id=pipeline_id,
        component_id=component_id,
        rate=body.rate,
        filter_spec=body.filter,
        output=body.output,
    ) as tapped:
        yield Opened()
        quiet_since = time.monotonic()
        while not tapped.closed:
            reason = await credential.revoked()
            if reason is not None:
                yield Revoked(reason)
                return
            events, skipped = await tapped.drain(DISCONNECT_CHECK_SECONDS)
            now = time.monotonic()
            if events or skipped:
                yield Caught(events, skipped)
                quiet_since = now
            elif now - quiet_since >= HEARTBEAT_SECONDS:
                yield Quiet()
                quiet_since = now
            if not events and await gone():
                return


def bucket_ms(raw: str | None) -> int:
    """``minute``, ``hour``, ``day`` or seconds (a multiple of 60, up to a day)."""
    if raw is None or not raw.strip():
        return BUCKET_MS
    text = raw.strip().lower()
    seconds = BUCKET_NAMES.get(text)
    if seconds is None:
        try:
            seconds = int(text)
        except ValueError:
            seconds = 0
    if seconds < 60 or seconds > 86_400 or seconds % 60:
        raise ValidationFailed(
            "bucket: minute, hour, day, or seconds (a multiple of 60 up to 86400)",
            context="querystring",
            errors=[
                ErrorItem(
                    keyword="bucket",
                    message="minute, hour, day, or seconds (a multiple of 60 up to 86400)",
                    instance_path="/bucket",
                )
            ],
        )
    return seconds * 1000


def _usage_query(*, one_pipeline: bool) -> RawQuery:
    """Each component's counters summed per bucket of ``:bucket`` ms, of the account's
    rows from ``:first_ms`` to ``:to_ms``, oldest bucket first (of ``:pipeline_id``
    only, when ``one_pipeline``)."""
    bucket = bindparam("bucket", type_=BigInteger)
    start = PipelineUsage.bucket_ms - PipelineUsage.bucket_ms % bucket
    query = (
        select(
            PipelineUsage.pipeline_id,
            PipelineUsage.component_id,
            start.label("start"),
            func.sum(PipelineUsage.ingress_events).label("in_events"),
            func.sum(PipelineUsage.ingress_bytes).label("in_bytes"),
            func.sum(PipelineUsage.egress_events).label("out_events"),
            func.sum(PipelineUsage.egress_bytes).label("out_bytes"),
        )
        .where(
            PipelineUsage.account_id == bindparam("account_id"),
            PipelineUsage.bucket_ms >= bindparam("first_ms", type_=BigInteger),
            PipelineUsage.bucket_ms <= bindparam("to_ms", type_=BigInteger),
        )
        .group_by(PipelineUsage.pipeline_id, PipelineUsage.component_id, start)
        .order_by(start, PipelineUsage.pipeline_id, PipelineUsage.component_id)
    )
    if one_pipeline:
        query = query.where(PipelineUsage.pipeline_id == bindparam("pipeline_id"))
    return RawQuery(query)


_USAGE = _usage_query(one_pipeline=False)
_PIPELINE_USAGE = _usage_query(one_pipeline=True)


def _count(value: Any, asked: bool) -> int | None:
    return int(value or 0) if asked else None


async def read_usage(
    *,
    db: Database,
    account_id: str,
    from_ms: int,
    to_ms: int,
    bucket: int,
    pipeline_id: str | None,
    traffic: schemas.Traffic,
) -> list[dict[str, object]]:
    """``schemas.UsagePoint``'s documents, from one raw read: each component's events and
    bytes in and out per bucket of ``bucket`` ms (only the directions ``traffic``
    asks for; the others null)."""
    if (to_ms - from_ms) // bucket > MAX_BUCKETS:
        raise ValidationFailed(
            f"from..to holds more than {MAX_BUCKETS} buckets: use a larger bucket",
            context="querystring",
        )
    params: dict[str, object] = {
        "account_id": account_id,
        "first_ms": from_ms - from_ms % BUCKET_MS,
        "to_ms": to_ms,
        "bucket": bucket,
    }
    query = _USAGE
    if pipeline_id is not None:
        query, params["pipeline_id"] = _PIPELINE_USAGE, pipeline_id
    inward, outward = traffic in ("ingress", "both"), traffic in ("egress", "both")
    return [
        {
            "pipeline_id": row.pipeline_id,
            "component_id": row.component_id,
            "bucket": datetime.fromtimestamp(int(row.start) / 1000, tz=UTC),
            "bucket_ms": int(row.start),
            "ingress_events": _count(row.in_events, inward),
            "ingress_bytes": _count(row.in_bytes, inward),
            "egress_events": _count(row.out_events, outward),
            "egress_bytes": _count(row.out_bytes, outward),
        }
        for row in await db.fetch_records(query, params)
    ]

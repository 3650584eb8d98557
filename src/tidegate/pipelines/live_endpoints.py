"""HTTP for a running pipeline: the live tap (a round, or a stream) and usage metrics.

Registered before the pipeline router: ``/v3/pipeline/metric/usage`` is not a pipeline.

A tap stream (``POST .../tap/{component_id}/stream``) answers server-sent events:
- ``event: ready`` once, when events passing from now on will arrive;
- one unnamed event per event caught, its data the event as JSON;
- ``event: skipped`` with ``{"skipped": n}``: n events passed that the stream did not
  carry (over its ``rate``, or while the reader was behind), told before the next ones;
- a ``: heartbeat`` comment after ``HEARTBEAT_SECONDS`` without any event;
- ``event: error`` with ``{"error": "..."}`` just before the server ends the stream
  (the credential no longer reads or manages the account, or the stream could not
  open). The stream also ends, with no event, when the server stops.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Annotated, Any, Final

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import StreamingResponse

from tidegate.api.envelope import Envelope, SelfLinks, envelope, link
from tidegate.api.raw_json import envelope_meta, enveloped
from tidegate.app_state import app_state
from tidegate.auth.dependencies import AccountId, CurrentPrincipal
from tidegate.auth.roles import Permission
from tidegate.clock import now_ms
from tidegate.errors import RateLimited
from tidegate.export.schemas import epoch_ms
from tidegate.kit.tap import TapBusy
from tidegate.pipelines import live_schemas as schemas
from tidegate.pipelines import live_service as service
from tidegate.pipelines.live_service import DEFAULT_SPAN_MS
from tidegate.pipelines.paths import ERRORS, NodeIdPath, PipelineIdPath
from tidegate.tail.service import Revoked, TailCredential

router = APIRouter(prefix="/v3/pipeline", tags=["Pipelines"], responses=ERRORS)

TAP: Final = "/v3/pipeline/{pipeline_id}/tap/{component_id}"
USAGE: Final = "/v3/pipeline/metric/usage"
TAP_LINKS: Final = SelfLinks(
    list=None, detail=None, update=None, replace=None, create=link("post", TAP)
)
USAGE_LINKS: Final = SelfLinks(
    list=link("get", USAGE), detail=None, update=None, replace=None, create=None
)
USAGE_META: Final = envelope_meta(type="pipeline usage", pk=None, links=USAGE_LINKS)


@router.get(
    "/metric/usage",
    summary="Events and bytes into and out of each component, per time bucket",
    description="Counted by every worker as batches run and added to the database every "
    "few seconds (`TIDEGATE_PIPELINE_USAGE_FLUSH_S`, default 5), so the latest seconds may "
    "be missing. Bytes are estimated: each batch's body size shared evenly over its events.",
    response_model=Envelope[list[schemas.UsagePoint]],
)
async def pipeline_usage(
    request: Request,
    account_id: AccountId,
    from_: Annotated[
        str | None,
        Query(alias="from", description="Start, epoch seconds or ms (default: an hour ago)"),
    ] = None,
    to: Annotated[str | None, Query(description="End, epoch seconds or ms (default: now)")] = None,
    bucket: Annotated[
        str | None,
        Query(description="`minute` (default), `hour`, `day`, or seconds (a multiple of 60)"),
    ] = None,
    pipeline_id: Annotated[str | None, Query(max_length=36, description="One pipeline")] = None,
    traffic: Annotated[schemas.Traffic, Query(description="What to count")] = "both",
) -> Response:
    to_ms = epoch_ms(to, name="to", end=True) if to else now_ms()
    from_ms = epoch_ms(from_, name="from", end=False) if from_ else to_ms - DEFAULT_SPAN_MS
    data = await service.read_usage(
        db=app_state(request).db,
        account_id=account_id,
        from_ms=min(from_ms, to_ms),
        to_ms=to_ms,
        bucket=service.bucket_ms(bucket),
        pipeline_id=pipeline_id or None,
        traffic=traffic,
    )
    return enveloped(USAGE_META, data)


@router.post(
    "/{pipeline_id}/tap/{component_id}",
    summary="Up to `limit` events passing a component within `timeout` seconds",
    description="Nothing is stored: the events are caught as the published revision runs "
    "and answered when `limit` are caught or `timeout` passes. The component's output is "
    "shown (for a destination, what it receives). With `TIDEGATE_REDIS_URL` the tap sees "
    "every worker's events; without, the events of the worker that answers.",
)
async def tap_component(
    request: Request,
    pipeline_id: PipelineIdPath,
    component_id: NodeIdPath,
    body: schemas.TapRequest,
    account_id: AccountId,
) -> Envelope[schemas.TapResult]:
    state = app_state(request)
    data = await service.tap(
        db=state.db,
        taps=state.pipelines.taps,
        account_id=account_id,
        pipeline_id=pipeline_id,
        component_id=component_id,
        body=body,
    )
    return envelope(data, type="tap", pk=None, links=TAP_LINKS)


@router.post(
    "/{pipeline_id}/tap/{component_id}/stream",
    summary="Stream the events passing a component (server-sent events)",
    description="Open until the client leaves: nothing passes unseen between rounds, as it "
    "does between two requests of the tap. At most `rate` events a second are sent; every "
    "event passed and not sent (over the rate, or while the client was behind) is counted "
    "in an `event: skipped`. Events: `ready`, one unnamed event per event caught (its "
    "JSON), `skipped` (`{skipped}`), a heartbeat comment, and `error` (`{error}`) before "
    "the server ends it. With `TIDEGATE_REDIS_URL` it sees every worker's events.",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}, "description": "An event stream"}},
)
async def stream_component(
    request: Request,
    pipeline_id: PipelineIdPath,
    component_id: NodeIdPath,
    body: schemas.TapStreamRequest,
    principal: CurrentPrincipal,
) -> StreamingResponse:
    state = app_state(request)
    account_id = principal.account()
    await service.check_tapped(
        db=state.db,
        account_id=account_id,
        pipeline_id=pipeline_id,
        component_id=component_id,
        body=body,
    )
    try:
        state.pipelines.taps.can_stream(account_id)
    except TapBusy as error:
        raise RateLimited(str(error), headers={"Retry-After": "5"}) from None
    credential = TailCredential(
        state=state, principal=principal, account_id=account_id, needs=Permission.MANAGE
    )
    events = service.stream_tap(
        taps=state.pipelines.taps,
        credential=credential,
        pipeline_id=pipeline_id,
        component_id=component_id,
        body=body,
        gone=request.is_disconnected,
    )
    return StreamingResponse(
        _sse(events),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


def _named(name: str, data: Any) -> str:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


async def _sse(events: AsyncIterator[service.TapEvent]) -> AsyncIterator[str]:
    try:
        async for event in events:
            if isinstance(event, service.Opened):
                yield _named("ready", {})
            elif isinstance(event, service.Caught):
                parts = [_named("skipped", {"skipped": event.skipped})] if event.skipped else []
                parts.extend(f"data: {caught.decode()}\n\n" for caught in event.events)
                yield "".join(parts)
            elif isinstance(event, Revoked):
                yield _named("error", {"error": event.reason})
            else:
                yield ": heartbeat\n\n"
    except TapBusy as error:
        yield _named("error", {"error": str(error)})

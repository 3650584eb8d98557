"""HTTP for a running pipeline: the live tap and usage metrics.

Registered before the pipeline router: ``/v3/pipeline/metric/usage`` is not a pipeline.
"""

from __future__ import annotations

from typing import Annotated, Final

from fastapi import APIRouter, Query, Request, Response

from tidegate.api.envelope import Envelope, SelfLinks, envelope, link
from tidegate.api.raw_json import envelope_meta, enveloped
from tidegate.app_state import app_state
from tidegate.auth.dependencies import AccountId
from tidegate.clock import now_ms
from tidegate.export.schemas import epoch_ms
from tidegate.pipelines import live_schemas as schemas
from tidegate.pipelines import live_service as service
from tidegate.pipelines.live_service import DEFAULT_SPAN_MS
from tidegate.pipelines.paths import ERRORS, NodeIdPath, PipelineIdPath

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

"""GET /metrics: the Prometheus text exposition (no credentials, like /healthz).

Nothing tenant-specific is exposed (see `tidegate.metrics`); an operator who does not
want the endpoint reachable from outside filters the path at the proxy."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from tidegate import metrics

router = APIRouter(tags=["Health"])


@router.get("/metrics", summary="Prometheus metrics (no credentials)", include_in_schema=False)
async def prometheus_metrics() -> Response:
    return Response(content=metrics.render(), media_type=metrics.CONTENT_TYPE)

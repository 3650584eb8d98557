"""Every router is registered here. Each management router is included with the
credential check, so a management endpoint is authenticated unless it is deliberately
put elsewhere."""

from __future__ import annotations

from fastapi import APIRouter, Depends, FastAPI

from tidegate.aggregate.endpoints import router as aggregate_router
from tidegate.api import health, metrics
from tidegate.auth.dependencies import authenticate, authenticate_export
from tidegate.boards.endpoints import router as boards_router
from tidegate.categories.endpoints import router as categories_router
from tidegate.enterprise.endpoints import router as enterprise_router
from tidegate.exclusions.endpoints import router as exclusions_router
from tidegate.export.endpoints import router as export_router
from tidegate.export.endpoints import v1_router as export_v1_router
from tidegate.gateway.endpoints import router as gateway_router
from tidegate.index_rate.endpoints import router as index_rate_router
from tidegate.ingest.endpoints import router as ingest_router
from tidegate.ingest.endpoints import usage_router
from tidegate.keys.endpoints import router as keys_router
from tidegate.logs.tail_endpoints import router as tail_router
from tidegate.pipelines.endpoints import router as pipelines_router
from tidegate.pipelines.gateway_endpoints import router as gateway_routes_router
from tidegate.pipelines.live_endpoints import router as pipeline_live_router
from tidegate.runtime.simulation_endpoints import router as simulation_router
from tidegate.suspensions.endpoints import router as suspensions_router
from tidegate.usage.endpoints import v1_router as usage_v1_router
from tidegate.usage.endpoints import v2_router as usage_v2_router
from tidegate.views.endpoints import router as views_router


def include_routes(target: FastAPI | APIRouter) -> None:
    """Register every router on ``target`` (the app), each one level deep: FastAPI
    matches included routers as a tree and walks it on every request, so nesting the
    management routers under a router of their own cost each request a level of it."""
    target.include_router(health.router)
    target.include_router(metrics.router)  # GET /metrics, no credentials
    target.include_router(gateway_router)  # its own credential: a route's access key
    # Ingestion keys only: management credentials do not apply here.
    target.include_router(ingest_router)
    management = [Depends(authenticate)]
    for router in (
        enterprise_router,
        keys_router,
        exclusions_router,
        suspensions_router,
        boards_router,
        views_router,
        categories_router,
        index_rate_router,
        usage_router,
        usage_v1_router,
        usage_v2_router,
        # Gateway routes first: "/v3/pipeline/gateway-route" is not a pipeline id.
        gateway_routes_router,
        # Before the pipelines: "/v3/pipeline/simulate-processor" is not a pipeline id.
        simulation_router,
        # Before the pipelines: "/v3/pipeline/metric/usage" is not a pipeline's path.
        pipeline_live_router,
        pipelines_router,
        # Data plane reads: account-scoped, management credentials, the per-key rate
        # limit counts each export page, aggregation and tail connection once.
        aggregate_router,
        tail_router,
    ):
        target.include_router(router, dependencies=management)
    # The exports also take the platform's ?servicekey= (its CLI sends the key there).
    for router in (export_router, export_v1_router):
        target.include_router(router, dependencies=[Depends(authenticate_export)])


def build_router() -> APIRouter:
    root = APIRouter()
    include_routes(root)
    return root

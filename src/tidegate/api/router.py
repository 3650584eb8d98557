"""Every router is registered here. The management router requires credentials, so a
management endpoint is authenticated unless it is deliberately put elsewhere."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from tidegate.api import health, metrics
from tidegate.auth.dependencies import authenticate
from tidegate.boards.endpoints import router as boards_router
from tidegate.enterprise.endpoints import router as enterprise_router
from tidegate.exclusions.endpoints import router as exclusions_router
from tidegate.export.endpoints import router as export_router
from tidegate.gateway.endpoints import router as gateway_router
from tidegate.ingest.endpoints import router as ingest_router
from tidegate.ingest.endpoints import usage_router
from tidegate.keys.endpoints import router as keys_router
from tidegate.logs.tail_endpoints import router as tail_router
from tidegate.pipelines.endpoints import router as pipelines_router
from tidegate.pipelines.gateway_endpoints import router as gateway_routes_router
from tidegate.runtime.simulation_endpoints import router as simulation_router


def build_router() -> APIRouter:
    management = APIRouter(dependencies=[Depends(authenticate)])
    management.include_router(enterprise_router)
    management.include_router(keys_router)
    management.include_router(exclusions_router)
    management.include_router(boards_router)
    management.include_router(usage_router)
    # Gateway routes first: "/v3/pipeline/gateway-route" is not a pipeline id.
    management.include_router(gateway_routes_router)
    # Before the pipelines: "/v3/pipeline/simulate-processor" is not a pipeline id.
    management.include_router(simulation_router)
    management.include_router(pipelines_router)
    # Data plane reads: account-scoped, management credentials, the per-key rate limit
    # counts each export page and each tail connection once.
    management.include_router(export_router)
    management.include_router(tail_router)

    root = APIRouter()
    root.include_router(health.router)
    root.include_router(metrics.router)  # GET /metrics, no credentials
    root.include_router(gateway_router)  # its own credential: a route's access key
    # Ingestion keys only: management credentials do not apply here.
    root.include_router(ingest_router)
    root.include_router(management)
    return root

"""Every router is registered here. Each management router is included with the
credential check, so a management endpoint is authenticated unless it is deliberately
put elsewhere."""

from __future__ import annotations

from fastapi import APIRouter, Depends, FastAPI

from tidegate.aggregate.endpoints import router as aggregate_router
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
from tidegate.logs.tail_socket import router as tail_socket_router
from tidegate.pipelines.endpoints import router as pipelines_router
from tidegate.pipelines.gateway_endpoints import router as gateway_routes_router
from tidegate.runtime.simulation_endpoints import router as simulation_router


def include_routes(target: FastAPI | APIRouter) -> None:
    """Register every router on ``target`` (the app), each one level deep: FastAPI
    matches included routers as a tree and walks it on every request, so nesting the
    management routers under a router of their own cost each request a level of it."""
    target.include_router(health.router)
    target.include_router(metrics.router)  # GET /metrics, no credentials
    target.include_router(gateway_router)  # its own credential: a route's access key
    # Ingestion keys only: management credentials do not apply here.
    target.include_router(ingest_router)
    # WebSocket live tail: authenticates its handshake itself with the management
    # resolver (route dependencies are made for HTTP requests).
    target.include_router(tail_socket_router)
    management = [Depends(authenticate)]
    for router in (
        enterprise_router,
        keys_router,
        exclusions_router,
        boards_router,
        usage_router,
        # Gateway routes first: "/v3/pipeline/gateway-route" is not a pipeline id.
        gateway_routes_router,
        # Before the pipelines: "/v3/pipeline/simulate-processor" is not a pipeline id.
        simulation_router,
        pipelines_router,
        # Data plane reads: account-scoped, management credentials, the per-key rate
        # limit counts each export page, aggregation and tail connection once.
        export_router,
        aggregate_router,
        tail_router,
    ):
        target.include_router(router, dependencies=management)


def build_router() -> APIRouter:
    root = APIRouter()
    include_routes(root)
    return root

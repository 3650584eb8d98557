"""Every router is registered here. The management router requires credentials, so a
management endpoint is authenticated unless it is deliberately put elsewhere."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from tidegate.api import health
from tidegate.auth.dependencies import authenticate
from tidegate.enterprise.endpoints import router as enterprise_router


def build_router() -> APIRouter:
    management = APIRouter(dependencies=[Depends(authenticate)])
    management.include_router(enterprise_router)

    root = APIRouter()
    root.include_router(health.router)
    root.include_router(management)
    return root

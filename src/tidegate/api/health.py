from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel

router = APIRouter(tags=["Health"])


class Health(BaseModel):
    status: str


@router.get("/healthz", summary="Liveness check (no credentials)")
async def healthz() -> Health:
    return Health(status="ok")

"""HTTP for the v1 ingestion suspension API."""

from __future__ import annotations

from fastapi import APIRouter

from tidegate.api.error_models import LEGACY_ERRORS
from tidegate.api.session import SessionDep
from tidegate.auth.dependencies import AccountId
from tidegate.suspensions import schemas, service

router = APIRouter(
    prefix="/v1/config/ingestion", tags=["Ingestion suspension"], responses=LEGACY_ERRORS
)


@router.get("/status", summary="Whether the account's ingestion is active or suspended")
async def ingestion_status(session: SessionDep, account_id: AccountId) -> schemas.IngestionStatus:
    return await service.status(session=session, account_id=account_id)


@router.post(
    "/suspend",
    summary="Start suspending ingestion: answers a token to confirm with (10 minutes, once)",
)
async def suspend(session: SessionDep, account_id: AccountId) -> schemas.SuspendToken:
    return await service.request_suspension(session=session, account_id=account_id)


@router.post(
    "/suspend/confirm",
    summary="Suspend ingestion: every ingestion request is refused (403) until resumed",
)
async def confirm(
    body: schemas.SuspendConfirm, session: SessionDep, account_id: AccountId
) -> schemas.IngestionStatus:
    return await service.confirm_suspension(
        session=session, account_id=account_id, token=body.token
    )


@router.post("/resume", summary="Resume ingestion")
async def resume(session: SessionDep, account_id: AccountId) -> schemas.IngestionStatus:
    return await service.resume(session=session, account_id=account_id)

"""HTTP for the v1 ingestion suspension API."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from tidegate.api.error_models import LEGACY_ERRORS
from tidegate.api.raw_json import json_response
from tidegate.api.session import SessionDep
from tidegate.app_state import app_state
from tidegate.auth.dependencies import AccountId
from tidegate.suspensions import schemas, service

router = APIRouter(
    prefix="/v1/config/ingestion", tags=["Ingestion suspension"], responses=LEGACY_ERRORS
)


@router.get(
    "/status",
    summary="Whether the account's ingestion is active or suspended",
    response_model=schemas.IngestionStatus,
)
async def ingestion_status(request: Request, account_id: AccountId) -> Response:
    return json_response(await service.read_status(db=app_state(request).db, account_id=account_id))


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

"""HTTP for archiving (``/v1/config/archiving``): parse, call the service, answer.

The platform's clients expect a 200 to every operation (the Terraform provider fails
on any other status) and read the configuration back as the flat object they sent."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Request
from fastapi.responses import Response

from tidegate.api.error_models import LEGACY_ERRORS_WITH_CONFLICT
from tidegate.api.raw_json import json_response
from tidegate.api.session import SessionDep
from tidegate.app_state import app_state
from tidegate.archive import schemas, service
from tidegate.auth.dependencies import AccountId, SealerDep
from tidegate.clock import now_ms
from tidegate.kit.destination_guard import DestinationPolicy, policy_from_setting

router = APIRouter(
    prefix="/v1/config/archiving", tags=["Archiving"], responses=LEGACY_ERRORS_WITH_CONFLICT
)

ConfigBody = Annotated[
    dict[str, Any],
    Body(
        description="`integration` (s3, ibm, dos, azblob, gcs, swift) and its fields, flat "
        "(docs/archiving.md)",
        examples=[{"integration": "s3", "bucket": "my-archive"}],
    ),
]


def _destinations(request: Request) -> DestinationPolicy:
    return policy_from_setting(app_state(request).settings.destination_allow)


@router.get(
    "",
    summary="The account's archiving configuration, as it was sent",
    response_model=dict[str, Any],
)
async def get_archiving(request: Request, account_id: AccountId) -> Response:
    state = app_state(request)
    return json_response(
        await service.read(db=state.db, sealer=state.sealer, account_id=account_id)
    )


@router.post("", summary="Configure archiving (200; 409 when it is configured already)")
async def create_archiving(
    body: ConfigBody,
    request: Request,
    session: SessionDep,
    sealer: SealerDep,
    account_id: AccountId,
) -> dict[str, Any]:
    return await service.create(
        session=session,
        sealer=sealer,
        policy=_destinations(request),
        account_id=account_id,
        body=body,
        now_ms=now_ms(),
    )


@router.put("", summary="Change the archiving configuration")
async def update_archiving(
    body: ConfigBody,
    request: Request,
    session: SessionDep,
    sealer: SealerDep,
    account_id: AccountId,
) -> dict[str, Any]:
    return await service.update(
        session=session,
        sealer=sealer,
        policy=_destinations(request),
        account_id=account_id,
        body=body,
        now_ms=now_ms(),
    )


@router.delete("", summary="Stop archiving (what was written stays in the bucket)")
async def delete_archiving(session: SessionDep, account_id: AccountId) -> dict[str, Any]:
    await service.remove(session=session, account_id=account_id)
    return {}


@router.get(
    "/status",
    summary="The last 31 days archived or to archive, newest first",
    response_model=schemas.ArchiveStatus,
)
async def archiving_status(request: Request, account_id: AccountId) -> Response:
    db = app_state(request).db
    return json_response(await service.read_status(db=db, account_id=account_id))


@router.post("/run", summary="Write a past UTC day now (again); the runner picks it up")
async def run_archiving(
    session: SessionDep, account_id: AccountId, body: schemas.ArchiveRunRequest | None = None
) -> schemas.ArchiveDayStatus:
    return await service.request_run(
        session=session,
        account_id=account_id,
        day_text=None if body is None else body.day,
        now_ms=now_ms(),
    )

"""HTTP for members: ``/v1/config/members``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, BackgroundTasks, Path, Request
from fastapi.responses import Response

from tidegate import mail
from tidegate.api.error_models import LEGACY_ERRORS_WITH_CONFLICT
from tidegate.api.raw_json import json_response
from tidegate.api.session import SessionDep
from tidegate.api.text import STORABLE_TEXT
from tidegate.app_state import app_state
from tidegate.auth.dependencies import AccountId, CurrentPrincipal
from tidegate.members import schemas, service

router = APIRouter(
    prefix="/v1/config/members", tags=["Members"], responses=LEGACY_ERRORS_WITH_CONFLICT
)

EmailPath = Annotated[
    str,
    Path(alias="email", min_length=1, max_length=320, pattern=STORABLE_TEXT,
         description="The member's e-mail"),
]  # fmt: skip


# Raw rows straight to JSON, no session, no models (api/raw_json.py).
@router.get("", summary="List the account's members", response_model=list[schemas.Member])
async def list_members(request: Request, account_id: AccountId) -> Response:
    return json_response(
        await service.list_members(db=app_state(request).db, account_id=account_id)
    )


@router.post("", summary="Add a member (a new e-mail is invited to set a password)")
async def add_member(
    body: schemas.MemberCreate,
    request: Request,
    session: SessionDep,
    principal: CurrentPrincipal,
    account_id: AccountId,
    background: BackgroundTasks,
) -> schemas.Member:
    settings = app_state(request).settings
    outbox: mail.Outbox = []
    member = await service.add_member(
        session=session,
        settings=settings,
        outbox=outbox,
        principal=principal,
        account_id=account_id,
        body=body,
    )
    background.add_task(mail.send_all, settings, outbox)  # after the commit
    return member


@router.get("/{email}", summary="Get a member", response_model=schemas.Member)
async def get_member(email: EmailPath, request: Request, account_id: AccountId) -> Response:
    return json_response(
        await service.read_member(db=app_state(request).db, account_id=account_id, email=email)
    )


@router.put("/{email}", summary="Change a member's role or groups")
async def update_member(
    email: EmailPath,
    body: schemas.MemberUpdate,
    session: SessionDep,
    principal: CurrentPrincipal,
    account_id: AccountId,
) -> schemas.Member:
    return await service.update_member(
        session=session, principal=principal, account_id=account_id, email=email, body=body
    )


@router.delete("/{email}", summary="Remove a member from the account")
async def remove_member(
    email: EmailPath, session: SessionDep, principal: CurrentPrincipal, account_id: AccountId
) -> schemas.Member:
    return await service.remove_member(
        session=session, principal=principal, account_id=account_id, email=email
    )


@router.post("/{email}/invitation", summary="Send a member who has no password a new invitation")
async def reinvite(
    email: EmailPath,
    request: Request,
    session: SessionDep,
    account_id: AccountId,
    background: BackgroundTasks,
) -> schemas.Member:
    settings = app_state(request).settings
    outbox: mail.Outbox = []
    member = await service.reinvite(
        session=session, settings=settings, outbox=outbox, account_id=account_id, email=email
    )
    background.add_task(mail.send_all, settings, outbox)  # after the commit
    return member

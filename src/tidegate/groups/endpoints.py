"""HTTP for groups: ``/v1/config/groups``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Request
from fastapi.responses import Response

from tidegate.api.error_models import LEGACY_ERRORS
from tidegate.api.path_params import id_path
from tidegate.api.raw_json import json_response
from tidegate.api.session import SessionDep
from tidegate.app_state import app_state
from tidegate.auth.dependencies import AccountId, CurrentPrincipal
from tidegate.groups import schemas, service

router = APIRouter(prefix="/v1/config/groups", tags=["Groups"], responses=LEGACY_ERRORS)

GroupIdPath = Annotated[str, id_path(alias="groupId", description="The group's id")]


@router.get("", summary="List the account's groups", response_model=list[schemas.Group])
async def list_groups(request: Request, account_id: AccountId) -> Response:
    return json_response(await service.list_groups(db=app_state(request).db, account_id=account_id))


@router.post("", summary="Create a group with an access scope")
async def create_group(
    body: schemas.GroupCreate, session: SessionDep, account_id: AccountId
) -> schemas.Group:
    return await service.create_group(session=session, account_id=account_id, body=body)


@router.get("/{groupId}", summary="Get a group", response_model=schemas.Group)
async def get_group(group_id: GroupIdPath, request: Request, account_id: AccountId) -> Response:
    db = app_state(request).db
    return json_response(await service.read_group(db=db, account_id=account_id, group_id=group_id))


@router.patch("/{groupId}", summary="Change a group's name or access scope")
async def update_group(
    group_id: GroupIdPath,
    body: schemas.GroupUpdate,
    session: SessionDep,
    account_id: AccountId,
    principal: CurrentPrincipal,
) -> schemas.Group:
    return await service.update_group(
        session=session, principal=principal, account_id=account_id, group_id=group_id, body=body
    )


@router.delete("/{groupId}", summary="Delete a group (its members keep their role)")
async def delete_group(
    group_id: GroupIdPath, session: SessionDep, account_id: AccountId, principal: CurrentPrincipal
) -> schemas.Group:
    return await service.delete_group(
        session=session, principal=principal, account_id=account_id, group_id=group_id
    )

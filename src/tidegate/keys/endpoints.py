"""HTTP for the v1 keys API: parse, call the service, answer the model."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response

from tidegate.api.error_models import LEGACY_ERRORS
from tidegate.api.path_params import id_path
from tidegate.api.raw_json import json_response
from tidegate.api.session import SessionDep
from tidegate.app_state import app_state
from tidegate.auth.dependencies import AccountId, CurrentPrincipal, MadeBy
from tidegate.auth.secrets import Sealer
from tidegate.keys import schemas, service

router = APIRouter(prefix="/v1/config/keys", tags=["Keys"], responses=LEGACY_ERRORS)

KeyTypeQuery = Annotated[
    schemas.AccountKeyType,
    Query(alias="type", description="The kind of key to create"),
]
KeyIdPath = Annotated[str, id_path(alias="id", description="The key's id")]
KeyTypeFilter = Annotated[
    schemas.AccountKeyType | None,
    Query(alias="type", description="Only keys of this kind"),
]


def _sealer(request: Request) -> Sealer:
    return app_state(request).sealer


SealerDep = Annotated[Sealer, Depends(_sealer)]


@router.post("", summary="Create a service or ingestion key")
async def create_key(
    key_type: KeyTypeQuery,
    session: SessionDep,
    sealer: SealerDep,
    account_id: AccountId,
    made_by: MadeBy,
    body: schemas.KeyCreate | None = None,
) -> schemas.CreatedKey:
    return await service.create_key(
        session=session,
        sealer=sealer,
        account_id=account_id,
        key_type=key_type,
        name=body.name if body is not None else None,
        made_by=made_by,
    )


# The reads: raw rows straight to JSON, no session, no models (api/raw_json.py).
@router.get(
    "", summary="List the account's service and ingestion keys", response_model=list[schemas.Key]
)
async def list_keys(
    request: Request,
    account_id: AccountId,
    principal: CurrentPrincipal,
    key_type: KeyTypeFilter = None,
) -> Response:
    state = app_state(request)
    data = await service.list_keys(
        db=state.db,
        sealer=state.sealer,
        account_id=account_id,
        reader_role=principal.role,
        key_type=key_type,
    )
    return json_response(data)


@router.get(
    "/{id}",
    summary="Get a key, its secret included (null for keys made before 0005, and for keys "
    "that act above the reader's role)",
    response_model=schemas.Key,
)
async def get_key(
    key_id: KeyIdPath, request: Request, account_id: AccountId, principal: CurrentPrincipal
) -> Response:
    state = app_state(request)
    data = await service.read_key(
        db=state.db,
        sealer=state.sealer,
        account_id=account_id,
        key_id=key_id,
        reader_role=principal.role,
    )
    return json_response(data)


@router.put("/{id}", summary="Rename a key")
async def rename_key(
    key_id: KeyIdPath,
    body: schemas.KeyUpdate,
    session: SessionDep,
    sealer: SealerDep,
    account_id: AccountId,
    principal: CurrentPrincipal,
) -> schemas.Key:
    return await service.rename_key(
        session=session,
        sealer=sealer,
        account_id=account_id,
        key_id=key_id,
        body=body,
        reader_role=principal.role,
    )


@router.delete("/{id}", summary="Delete a key; it stops working at once")
async def delete_key(
    key_id: KeyIdPath,
    session: SessionDep,
    sealer: SealerDep,
    account_id: AccountId,
    principal: CurrentPrincipal,
) -> schemas.Key:
    return await service.delete_key(
        session=session,
        sealer=sealer,
        account_id=account_id,
        key_id=key_id,
        reader_role=principal.role,
    )

"""HTTP for the v1 views and preset-alerts API (and a view's delivery log)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Request
from fastapi.responses import Response

from tidegate.alerts.dependencies import DestinationPolicyDep
from tidegate.api.error_models import LEGACY_ERRORS
from tidegate.api.path_params import id_path
from tidegate.api.raw_json import json_response
from tidegate.api.session import SessionDep
from tidegate.app_state import app_state
from tidegate.auth.dependencies import AccountId, CurrentPrincipal, MadeBy, SealerDep
from tidegate.views import schemas, service

router = APIRouter(prefix="/v1/config", tags=["Views and alerts"], responses=LEGACY_ERRORS)

ViewIdPath = Annotated[str, id_path(alias="viewID", description="The view's id")]
PresetIdPath = Annotated[str, id_path(alias="presetid", description="The preset alert's id")]


# The lists: raw rows straight to JSON, no session, no models (api/raw_json.py).
@router.get("/view", summary="List the account's views", response_model=list[schemas.View])
async def list_views(request: Request, account_id: AccountId) -> Response:
    state = app_state(request)
    data = await service.list_views(db=state.db, account_id=account_id, sealer=state.sealer)
    return json_response(data)


@router.post("/view", summary="Create a view (a saved search), with its alert channels")
async def create_view(
    body: schemas.ViewIn,
    session: SessionDep,
    account_id: AccountId,
    sealer: SealerDep,
    policy: DestinationPolicyDep,
    made_by: MadeBy,
) -> schemas.View:
    return await service.create_view(
        session=session,
        account_id=account_id,
        body=body,
        sealer=sealer,
        policy=policy,
        made_by=made_by,
    )


@router.get("/view/{viewID}", summary="Get a view", response_model=schemas.View)
async def get_view(view_id: ViewIdPath, request: Request, account_id: AccountId) -> Response:
    state = app_state(request)
    return json_response(await service.read_view(state.db, state.sealer, account_id, view_id))


@router.put("/view/{viewID}", summary="Replace a view")
async def update_view(
    view_id: ViewIdPath,
    body: schemas.ViewIn,
    session: SessionDep,
    account_id: AccountId,
    sealer: SealerDep,
    policy: DestinationPolicyDep,
    made_by: MadeBy,
) -> schemas.View:
    return await service.update_view(
        session=session,
        account_id=account_id,
        view_id=view_id,
        body=body,
        sealer=sealer,
        policy=policy,
        made_by=made_by,
    )


@router.delete("/view/{viewID}", summary="Delete a view (and its alerts)")
async def delete_view(
    view_id: ViewIdPath, session: SessionDep, account_id: AccountId, sealer: SealerDep
) -> schemas.View:
    return await service.delete_view(
        session=session, account_id=account_id, view_id=view_id, sealer=sealer
    )


@router.get(
    "/view/{viewID}/alerts",
    summary="The view's alert delivery log: when it fired, to which channel, the outcome",
    response_model=list[schemas.Delivery],
)
async def view_deliveries(
    view_id: ViewIdPath, request: Request, account_id: AccountId, principal: CurrentPrincipal
) -> Response:
    data = await service.read_delivery_log(
        db=app_state(request).db, account_id=account_id, view_id=view_id, scope=principal.scope
    )
    return json_response(data)


@router.get(
    "/presetalert", summary="List the account's preset alerts", response_model=list[schemas.Preset]
)
async def list_presets(request: Request, account_id: AccountId) -> Response:
    state = app_state(request)
    data = await service.list_presets(db=state.db, account_id=account_id, sealer=state.sealer)
    return json_response(data)


@router.post("/presetalert", summary="Create a preset alert (channels views can share)")
async def create_preset(
    body: schemas.PresetIn,
    session: SessionDep,
    account_id: AccountId,
    sealer: SealerDep,
    policy: DestinationPolicyDep,
    made_by: MadeBy,
) -> schemas.Preset:
    return await service.create_preset(
        session=session,
        account_id=account_id,
        body=body,
        sealer=sealer,
        policy=policy,
        made_by=made_by,
    )


@router.get("/presetalert/{presetid}", summary="Get a preset alert", response_model=schemas.Preset)
async def get_preset(preset_id: PresetIdPath, request: Request, account_id: AccountId) -> Response:
    state = app_state(request)
    return json_response(await service.read_preset(state.db, state.sealer, account_id, preset_id))


@router.put("/presetalert/{presetid}", summary="Replace a preset alert")
async def update_preset(
    preset_id: PresetIdPath,
    body: schemas.PresetIn,
    session: SessionDep,
    account_id: AccountId,
    sealer: SealerDep,
    policy: DestinationPolicyDep,
    made_by: MadeBy,
) -> schemas.Preset:
    return await service.update_preset(
        session=session,
        account_id=account_id,
        preset_id=preset_id,
        body=body,
        sealer=sealer,
        policy=policy,
        made_by=made_by,
    )


@router.delete("/presetalert/{presetid}", summary="Delete a preset alert")
async def delete_preset(
    preset_id: PresetIdPath, session: SessionDep, account_id: AccountId, sealer: SealerDep
) -> schemas.Preset:
    return await service.delete_preset(
        session=session, account_id=account_id, preset_id=preset_id, sealer=sealer
    )

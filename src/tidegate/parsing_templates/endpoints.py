"""HTTP for the v1 parsing templates API (docs/line-parsing.md, "Custom templates")."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Request
from fastapi.responses import Response

from tidegate.api.error_models import LEGACY_ERRORS
from tidegate.api.path_params import id_path
from tidegate.api.raw_json import json_response
from tidegate.api.session import ReadSessionDep, SessionDep
from tidegate.app_state import app_state
from tidegate.auth.dependencies import AccountId, CurrentPrincipal
from tidegate.parsing_templates import schemas, service

router = APIRouter(
    prefix="/v1/config/parsing/templates", tags=["Parsing templates"], responses=LEGACY_ERRORS
)

TemplateIdPath = Annotated[str, id_path(alias="id", description="The id of a parsing template")]


@router.post("", summary="Create a parsing template (a draft unless `state` says otherwise)")
async def create_template(
    body: schemas.ParsingTemplateCreate, session: SessionDep, account_id: AccountId
) -> schemas.ParsingTemplate:
    return await service.create_template(session=session, account_id=account_id, body=body)


@router.get(
    "",
    summary="List the account's parsing templates, in the order they are tried",
    response_model=list[schemas.ParsingTemplate],
)
async def list_templates(request: Request, account_id: AccountId) -> Response:
    return json_response(
        await service.list_templates(db=app_state(request).db, account_id=account_id)
    )


@router.put("/order", summary="Reorder the account's parsing templates")
async def reorder_templates(
    body: schemas.ParsingTemplateOrder, session: SessionDep, account_id: AccountId
) -> list[schemas.ParsingTemplate]:
    return await service.reorder_templates(session=session, account_id=account_id, body=body)


@router.post(
    "/preview",
    summary="Try an unsaved pattern on the account's latest lines (or on given lines)",
)
async def preview_template(
    request: Request,
    body: schemas.ParsingTemplatePreview,
    # It writes nothing: never the write lock (docs/fair-reads.md).
    session: ReadSessionDep,
    account_id: AccountId,
    principal: CurrentPrincipal,
) -> schemas.ParsingTemplatePreviewResult:
    state = app_state(request)
    return await service.preview_template(
        database=state.db,
        session=session,
        sealer=state.sealer,
        account_id=account_id,
        scope=principal.scope,
        body=body,
    )


@router.get("/{id}", summary="Get a parsing template", response_model=schemas.ParsingTemplate)
async def get_template(
    template_id: TemplateIdPath, request: Request, account_id: AccountId
) -> Response:
    db = app_state(request).db
    return json_response(
        await service.read_template(db=db, account_id=account_id, template_id=template_id)
    )


@router.patch("/{id}", summary="Update a parsing template (name, pattern, state)")
async def update_template(
    template_id: TemplateIdPath,
    body: schemas.ParsingTemplateUpdate,
    session: SessionDep,
    account_id: AccountId,
) -> schemas.ParsingTemplate:
    return await service.update_template(
        session=session, account_id=account_id, template_id=template_id, body=body
    )


@router.post("/{id}/activate", summary="Make a parsing template active")
async def activate_template(
    template_id: TemplateIdPath, session: SessionDep, account_id: AccountId
) -> schemas.ParsingTemplate:
    return await service.activate_template(
        session=session, account_id=account_id, template_id=template_id
    )


@router.delete("/{id}", summary="Delete a parsing template")
async def delete_template(
    template_id: TemplateIdPath, session: SessionDep, account_id: AccountId
) -> schemas.ParsingTemplate:
    return await service.delete_template(
        session=session, account_id=account_id, template_id=template_id
    )

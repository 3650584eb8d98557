"""HTTP for the v1 categories API: ``/v1/config/categories/{type}[/{id}]``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request
from fastapi.responses import Response

from tidegate.api.error_models import LEGACY_ERRORS_WITH_CONFLICT
from tidegate.api.path_params import id_path
from tidegate.api.raw_json import json_response
from tidegate.api.session import SessionDep
from tidegate.app_state import app_state
from tidegate.auth.dependencies import AccountId
from tidegate.categories import schemas, service

router = APIRouter(
    prefix="/v1/config/categories", tags=["Categories"], responses=LEGACY_ERRORS_WITH_CONFLICT
)

TypePath = Annotated[
    schemas.CategoryType, Path(alias="type", description="views, boards or screens")
]
CategoryIdPath = Annotated[str, id_path(alias="id", description="The category's id")]


@router.get(
    "/{type}",
    summary="List the account's categories of one type",
    response_model=list[schemas.Category],
)
async def list_categories(type_: TypePath, request: Request, account_id: AccountId) -> Response:
    db = app_state(request).db
    return json_response(await service.list_categories(db=db, account_id=account_id, type_=type_))


@router.post("/{type}", summary="Create a category")
async def create_category(
    type_: TypePath, body: schemas.CategoryIn, session: SessionDep, account_id: AccountId
) -> schemas.Category:
    return await service.create_category(
        session=session, account_id=account_id, type_=type_, body=body
    )


@router.get("/{type}/{id}", summary="Get a category", response_model=schemas.Category)
async def get_category(
    type_: TypePath, category_id: CategoryIdPath, request: Request, account_id: AccountId
) -> Response:
    return json_response(
        await service.read_category(
            db=app_state(request).db, account_id=account_id, type_=type_, category_id=category_id
        )
    )


@router.put("/{type}/{id}", summary="Rename a category")
async def update_category(
    type_: TypePath,
    category_id: CategoryIdPath,
    body: schemas.CategoryIn,
    session: SessionDep,
    account_id: AccountId,
) -> schemas.Category:
    return await service.update_category(
        session=session, account_id=account_id, type_=type_, category_id=category_id, body=body
    )


@router.delete("/{type}/{id}", summary="Delete a category")
async def delete_category(
    type_: TypePath, category_id: CategoryIdPath, session: SessionDep, account_id: AccountId
) -> schemas.Category:
    return await service.delete_category(
        session=session, account_id=account_id, type_=type_, category_id=category_id
    )

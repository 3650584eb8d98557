"""HTTP for the v1 ingestion exclusion rules API."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import Field

from tidegate.api.error_models import LEGACY_ERRORS
from tidegate.api.path_params import id_path
from tidegate.api.raw_json import json_response
from tidegate.api.session import SessionDep
from tidegate.app_state import app_state
from tidegate.auth.dependencies import AccountId
from tidegate.exclusions import schemas, service

router = APIRouter(
    prefix="/v1/config/ingestion/exclusions", tags=["Exclusion rules"], responses=LEGACY_ERRORS
)

RuleIdPath = Annotated[str, id_path(alias="id", description="The id of an exclusion rule")]
# The spec's read answers a JSON array; for one id it always holds exactly one rule.
OneRule = Annotated[list[schemas.ExclusionRule], Field(min_length=1, max_length=1)]


@router.post("", summary="Create an ingestion exclusion rule")
async def create_rule(
    body: schemas.ExclusionRuleCreate, session: SessionDep, account_id: AccountId
) -> schemas.ExclusionRule:
    return await service.create_rule(session=session, account_id=account_id, body=body)


# The reads: raw rows straight to JSON, no session, no models (api/raw_json.py).
@router.get(
    "",
    summary="List the account's ingestion exclusion rules",
    response_model=list[schemas.ExclusionRule],
)
async def list_rules(request: Request, account_id: AccountId) -> Response:
    return json_response(await service.list_rules(db=app_state(request).db, account_id=account_id))


@router.get(
    "/{id}", summary="Get an ingestion exclusion rule (a one-element array)", response_model=OneRule
)
async def get_rule(rule_id: RuleIdPath, request: Request, account_id: AccountId) -> Response:
    db = app_state(request).db
    return json_response([await service.read_rule(db=db, account_id=account_id, rule_id=rule_id)])


@router.patch("/{id}", summary="Update an ingestion exclusion rule")
async def update_rule(
    rule_id: RuleIdPath,
    body: schemas.ExclusionRuleUpdate,
    session: SessionDep,
    account_id: AccountId,
) -> schemas.ExclusionRule:
    return await service.update_rule(
        session=session, account_id=account_id, rule_id=rule_id, body=body
    )


@router.delete("/{id}", summary="Delete an ingestion exclusion rule")
async def delete_rule(
    rule_id: RuleIdPath, session: SessionDep, account_id: AccountId
) -> schemas.ExclusionRule:
    return await service.delete_rule(session=session, account_id=account_id, rule_id=rule_id)

"""HTTP for the index-rate alert: ``GET|PUT /v1/config/index-rate``."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from tidegate.alerts.dependencies import DestinationPolicyDep
from tidegate.alerts.index_rate import schemas, service
from tidegate.api.error_models import LEGACY_ERRORS
from tidegate.api.raw_json import json_response
from tidegate.api.session import SessionDep
from tidegate.app_state import app_state
from tidegate.auth.dependencies import AccountId, SealerDep

router = APIRouter(
    prefix="/v1/config/index-rate", tags=["Index rate alert"], responses=LEGACY_ERRORS
)


@router.get(
    "",
    summary="The account's index-rate alert (defaults, disabled, when never set)",
    response_model=schemas.IndexRate,
)
async def get_index_rate(request: Request, account_id: AccountId) -> Response:
    state = app_state(request)
    data = await service.read_index_rate(db=state.db, account_id=account_id, sealer=state.sealer)
    return json_response(data)


@router.put("", summary="Set the index-rate alert (enabled: false switches it off)")
async def put_index_rate(
    body: schemas.IndexRateIn,
    session: SessionDep,
    account_id: AccountId,
    sealer: SealerDep,
    policy: DestinationPolicyDep,
) -> schemas.IndexRate:
    return await service.put_index_rate(
        session=session, account_id=account_id, body=body, sealer=sealer, policy=policy
    )

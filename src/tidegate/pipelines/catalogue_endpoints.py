"""HTTP for the component catalogue: ``GET /v3/pipeline/component-type``.

Registered before the pipeline router: ``component-type`` is not a pipeline id.
"""

from __future__ import annotations

from typing import Annotated, Final

from fastapi import APIRouter, Query, Request, Response

from tidegate.api.envelope import Envelope, SelfLinks, link
from tidegate.api.raw_json import envelope_meta, enveloped
from tidegate.app_state import app_state
from tidegate.auth.dependencies import AccountId
from tidegate.pipelines import catalogue_service as service
from tidegate.pipelines.catalogue_schemas import ComponentType
from tidegate.pipelines.paths import ERRORS
from tidegate.pipelines.schemas import NodeKind

router = APIRouter(prefix="/v3/pipeline", tags=["Pipelines"], responses=ERRORS)

COMPONENT_TYPES: Final = "/v3/pipeline/component-type"
LINKS: Final = SelfLinks(list=link("get", COMPONENT_TYPES))
META: Final = envelope_meta(type="component type", pk="type", links=LINKS)


@router.get(
    "/component-type",
    summary="Every component type a node may have, with the JSON Schema of its user_config",
    description="The types of each kind (`source`, `processor`, `destination`) in a fixed "
    "order, each with its configuration's JSON Schema (generated from the model that "
    "validates it on save), the account feature it needs and whether this account has it.",
    response_model=Envelope[list[ComponentType]],
)
async def list_component_types(
    request: Request,
    account_id: AccountId,
    kind: Annotated[NodeKind | None, Query(description="One kind only")] = None,
) -> Response:
    data = await service.read_component_types(
        db=app_state(request).db, account_id=account_id, kind=kind
    )
    return enveloped(META, data)

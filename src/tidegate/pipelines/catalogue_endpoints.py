"""HTTP for the component catalogue: ``GET /v3/pipeline/component-type``.

Registered before the pipeline router: ``component-type`` is not a pipeline id.
"""

from __future__ import annotations

from typing import Annotated, Final

from fastapi import APIRouter, Query

from tidegate.api.envelope import Envelope, SelfLinks, envelope, link
from tidegate.api.session import SessionDep
from tidegate.auth.dependencies import AccountId
from tidegate.pipelines import catalogue_service as service
from tidegate.pipelines.catalogue_schemas import ComponentType
from tidegate.pipelines.paths import ERRORS
from tidegate.pipelines.schemas import NodeKind

router = APIRouter(prefix="/v3/pipeline", tags=["Pipelines"], responses=ERRORS)

COMPONENT_TYPES: Final = "/v3/pipeline/component-type"
LINKS: Final = SelfLinks(list=link("get", COMPONENT_TYPES))


@router.get(
    "/component-type",
    summary="Every component type a node may have, with the JSON Schema of its user_config",
    description="The types of each kind (`source`, `processor`, `destination`) in a fixed "
    "order, each with its configuration's JSON Schema (generated from the model that "
    "validates it on save), the account feature it needs and whether this account has it.",
)
async def list_component_types(
    session: SessionDep,
    account_id: AccountId,
    kind: Annotated[NodeKind | None, Query(description="One kind only")] = None,
) -> Envelope[list[ComponentType]]:
    data = await service.component_types(session=session, account_id=account_id, kind=kind)
    return envelope(data, type="component type", pk="type", links=LINKS)

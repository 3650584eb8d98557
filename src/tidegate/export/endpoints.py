"""HTTP for Export v2 (``GET /v2/export``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from tidegate.api.error_models import LEGACY_ERRORS
from tidegate.app_state import app_state
from tidegate.auth.dependencies import AccountId, CurrentPrincipal
from tidegate.auth.scope import scoped_query
from tidegate.db.session import SessionDep
from tidegate.export import schemas, service

router = APIRouter(prefix="/v2/export", tags=["Export"], responses=LEGACY_ERRORS)

# Taken as text and parsed by ``schemas.parse_export_request`` so that every mistake is a
# 400 naming the parameter. The parameters that choose lines are shared with the
# aggregations (tidegate.aggregate.endpoints).
Text = str | None
FromParam = Annotated[
    Text, Query(alias="from", description="Start, epoch seconds or milliseconds (inclusive)")
]
ToParam = Annotated[Text, Query(description="End, epoch seconds or milliseconds (inclusive)")]
HostsParam = Annotated[Text, Query(description="Comma list of hosts")]
AppsParam = Annotated[Text, Query(description="Comma list of apps")]
LevelsParam = Annotated[Text, Query(description="Comma list of levels")]
SearchParam = Annotated[Text, Query(description="A search query (the platform syntax)")]


@router.get(
    "",
    summary="Export the account's stored lines, paged",
    # Documents the answer; the body itself is encoded in the export's worker thread
    # and returned as a ready Response, so FastAPI does not encode it on the loop.
    response_model=schemas.ExportPage,
)
async def export_lines(
    request: Request,
    session: SessionDep,
    account_id: AccountId,
    principal: CurrentPrincipal,
    from_: FromParam = None,
    to: ToParam = None,
    size: Annotated[Text, Query(description="Lines per page, 1 to 10000 (default 10000)")] = None,
    hosts: HostsParam = None,
    apps: AppsParam = None,
    levels: LevelsParam = None,
    query: SearchParam = None,
    prefer: Annotated[
        Text, Query(description="head: oldest first; tail (default): newest first")
    ] = None,
    pagination_id: Annotated[
        Text, Query(description="The previous page's pagination_id; absent for the first page")
    ] = None,
) -> Response:
    parsed = schemas.parse_export_request(
        from_=from_,
        to=to,
        size=size,
        hosts=hosts,
        apps=apps,
        levels=levels,
        # A person in groups sees only their scope (docs/people.md, "Groups").
        query=scoped_query(query, principal.scope),
        prefer=prefer,
        pagination_id=pagination_id,
    )
    state = app_state(request)
    body = await service.export_page(
        database_url=state.db.url,
        session=session,
        sealer=state.sealer,
        account_id=account_id,
        request=parsed,
    )
    return Response(content=body, media_type="application/json")

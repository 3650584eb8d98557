"""HTTP for aggregations (``GET /v1/aggregate``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from tidegate.aggregate import field_names, schemas, service
from tidegate.api.error_models import LEGACY_ERRORS
from tidegate.api.session import SessionDep
from tidegate.app_state import app_state
from tidegate.auth.dependencies import AccountId, CurrentPrincipal
from tidegate.auth.scope import scoped_query
from tidegate.export.endpoints import (
    AppsParam,
    FromParam,
    HostsParam,
    LevelsParam,
    SearchParam,
    Text,
    ToParam,
)
from tidegate.export.schemas import parse_export_request

router = APIRouter(prefix="/v1/aggregate", tags=["Aggregate"], responses=LEGACY_ERRORS)


@router.get(
    "",
    summary="Count the account's lines per time bucket and per host, app and level",
    description="The lines `from` <= `_ts` <= `to` that match `hosts`, `apps`, `levels` "
    "and `query` (as in `GET /v2/export`): a histogram of every bucket of the range and "
    "the most frequent hosts, apps and levels. See docs/aggregate.md.",
    # Documents the answer; the body is encoded in the worker thread that computed it.
    response_model=schemas.Aggregation,
)
async def aggregate_lines(
    request: Request,
    session: SessionDep,
    account_id: AccountId,
    principal: CurrentPrincipal,
    from_: FromParam = None,
    to: ToParam = None,
    hosts: HostsParam = None,
    apps: AppsParam = None,
    levels: LevelsParam = None,
    query: SearchParam = None,
    buckets: Annotated[
        Text,
        Query(
            description=f"Most histogram buckets wanted, 1 to {schemas.MAX_BUCKETS} "
            f"(default {schemas.DEFAULT_BUCKETS})"
        ),
    ] = None,
    top: Annotated[
        Text,
        Query(
            description=f"Values per field, 0 to {schemas.MAX_TOP} (default {schemas.DEFAULT_TOP}); "
            "0 leaves the top values out, which spares counting them"
        ),
    ] = None,
    fields: Annotated[
        Text,
        Query(
            description=f"Comma list of up to {schemas.MAX_EXTRA_FIELDS} more fields (parsed "
            "from the lines or sent in meta, as a query names them: `status`, `user.id`) "
            "whose top values are counted too, under `top.fields`"
        ),
    ] = None,
) -> Response:
    parsed = schemas.parse_aggregate_request(
        from_=from_,
        to=to,
        hosts=hosts,
        apps=apps,
        levels=levels,
        # A person in groups sees only their scope (docs/people.md, "Groups").
        query=scoped_query(query, principal.scope),
        buckets=buckets,
        top=top,
        fields=fields,
    )
    body = await service.aggregate(
        database=app_state(request).db,
        session=session,
        account_id=account_id,
        request=parsed,
    )
    return Response(content=body, media_type="application/json")


@router.get(
    "/fields",
    summary="Name the fields of the account's newest lines in a range",
    description="The key paths of the scalar values in the meta (sent, or parsed from the "
    f"line) of the range's newest {field_names.SAMPLE_LINES} lines that match `hosts`, "
    "`apps`, `levels` and `query` (all optional), with how many of them hold each: what "
    "a query may name (`status`, `user.id`). A sample: a field only older lines hold is "
    "not named. The web app's completion asks it without the query.",
    response_model=schemas.FieldPaths,
)
async def name_fields(
    request: Request,
    session: SessionDep,
    account_id: AccountId,
    principal: CurrentPrincipal,
    from_: FromParam = None,
    to: ToParam = None,
    hosts: HostsParam = None,
    apps: AppsParam = None,
    levels: LevelsParam = None,
    query: SearchParam = None,
) -> schemas.FieldPaths:
    parsed = parse_export_request(
        from_=from_,
        to=to,
        size=None,
        hosts=hosts,
        apps=apps,
        levels=levels,
        # A person in groups sees only their scope (docs/people.md, "Groups").
        query=scoped_query(query, principal.scope),
        prefer=None,
        pagination_id=None,
    )
    state = app_state(request)
    found = await field_names.field_paths(
        database=state.db,
        session=session,
        sealer=state.sealer,
        account_id=account_id,
        request=parsed,
    )
    return schemas.FieldPaths.model_validate(found)

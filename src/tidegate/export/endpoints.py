"""HTTP for the exports: v2 (``GET /v2/export``, paged) and v1 (``GET /v1/export``,
every line at once, as the platform's CLI reads it).

Both are registered with ``authenticate_export`` (tidegate.router): besides the
management credentials, the key may come as ``?servicekey=``. Credentials are checked
before anything else is done; the lines are read and encoded off the loop."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from tidegate.api.error_models import LEGACY_ERRORS
from tidegate.api.session import SessionDep
from tidegate.app_state import app_state
from tidegate.auth.dependencies import AccountId, CurrentPrincipal
from tidegate.auth.scope import scoped_query
from tidegate.clock import now_ms
from tidegate.errors import BadRequest, NotFound
from tidegate.export import context, schemas, service
from tidegate.logs.reading import PageReader, run_off_loop
from tidegate.views.service import apply_view

router = APIRouter(prefix="/v2/export", tags=["Export"], responses=LEGACY_ERRORS)
v1_router = APIRouter(prefix="/v1/export", tags=["Export"], responses=LEGACY_ERRORS)

# Taken as text and parsed by ``schemas.parse_export_request`` so that every mistake is a
# 400 naming the parameter. The parameters that choose lines are shared with the
# aggregations (tidegate.aggregate.endpoints).
Text = str | None
FromParam = Annotated[
    Text, Query(alias="from", description="Start, epoch s or ms, or ISO 8601 (inclusive)")
]
ToParam = Annotated[Text, Query(description="End, epoch s or ms, or ISO 8601 (inclusive)")]
HostsParam = Annotated[Text, Query(description="Comma list of hosts")]
AppsParam = Annotated[Text, Query(description="Comma list of apps")]
LevelsParam = Annotated[Text, Query(description="Comma list of levels")]
SearchParam = Annotated[Text, Query(description="A search query (the platform syntax)")]
ViewParam = Annotated[
    Text,
    Query(
        alias="viewID",
        description="A view's id: its query is ANDed with `query`; its hosts, apps and "
        "levels apply where the request gives none",
    ),
]
TagsParam = Annotated[Text, Query(description="Comma list of tags: lines with any of them")]


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
    tags: TagsParam = None,
    prefer: Annotated[
        Text, Query(description="head: oldest first; tail (default): newest first")
    ] = None,
    pagination_id: Annotated[
        Text, Query(description="The previous page's pagination_id; absent for the first page")
    ] = None,
    view_id: ViewParam = None,
) -> Response:
    search = await apply_view(
        session=session,
        account_id=account_id,
        view_id=view_id,
        query=query,
        hosts=hosts,
        apps=apps,
        levels=levels,
        tags=tags,
    )
    parsed = schemas.parse_export_request(
        from_=from_,
        to=to,
        size=size,
        hosts=search.hosts,
        apps=search.apps,
        levels=search.levels,
        # A person in groups sees only their scope (docs/people.md, "Groups").
        query=scoped_query(search.query, principal.scope),
        prefer=prefer,
        pagination_id=pagination_id,
        tags=search.tags,
    )
    state = app_state(request)
    body = await service.export_page(
        database=state.db,
        session=session,
        sealer=state.sealer,
        account_id=account_id,
        request=parsed,
    )
    return Response(content=body, media_type="application/json")


@v1_router.get(
    "",
    summary="Export the account's stored lines at once (NDJSON, or a JSON array)",
    description="Up to the plan's cap of lines (10,000; 20,000 on the enterprise plan), "
    "oldest first. Without `json`: one JSON line record per text line "
    "(`application/x-ndjson`); with `json=true`: one JSON array. See docs/api-v1.md.",
    responses={200: {"content": {"application/x-ndjson": {}, "application/json": {}}}},
)
async def export_lines_v1(
    request: Request,
    session: SessionDep,
    account_id: AccountId,
    principal: CurrentPrincipal,
    from_: Annotated[
        Text,
        Query(
            alias="from", description="Start, epoch s or ms, or ISO 8601 (default: all retained)"
        ),
    ] = None,
    to: Annotated[Text, Query(description="End, epoch s or ms, or ISO 8601 (default: now)")] = None,
    size: Annotated[
        Text, Query(description="Lines wanted; more than the plan's cap answers the cap")
    ] = None,
    hosts: HostsParam = None,
    apps: AppsParam = None,
    levels: LevelsParam = None,
    tags: TagsParam = None,
    q: SearchParam = None,
    query: Annotated[Text, Query(description="Same as `q`")] = None,
    prefer: Annotated[
        Text, Query(description="head: the first lines from `from`; tail (default): the last")
    ] = None,
    json: Annotated[
        Text, Query(description="true: answer one JSON array instead of NDJSON")
    ] = None,
    view_id: ViewParam = None,
) -> Response:
    if q and query and q.strip() != query.strip():
        raise BadRequest("q: and query: name the same search; send one of them")
    search = await apply_view(
        session=session,
        account_id=account_id,
        view_id=view_id,
        query=query or q,
        hosts=hosts,
        apps=apps,
        levels=levels,
        tags=tags,
    )
    parsed = schemas.parse_export_v1_request(
        from_=from_,
        to=to,
        size=size,
        hosts=search.hosts,
        apps=search.apps,
        levels=search.levels,
        tags=search.tags,
        # A person in groups sees only their scope (docs/people.md, "Groups").
        query=scoped_query(search.query, principal.scope),
        prefer=prefer,
        json_=json,
        now_ms=now_ms(),
    )
    body = await service.export_v1(
        database=app_state(request).db,
        session=session,
        account_id=account_id,
        request=parsed,
    )
    media_type = "application/json" if parsed.as_json else "application/x-ndjson"
    return Response(content=body, media_type=media_type)


@v1_router.get(
    "/context",
    summary="The lines just before and after a line, from the same host and app (or as asked)",
    description="`line` is a line's `_id` (from an export or a search). Answers the line "
    "and up to `before` lines before it and `after` lines after it (0 to 100, default "
    "20) from the same host and app (`around`: or the same host, or the whole account), "
    "in the export's (`_ts`, `_id`) order, oldest first "
    "on both sides. Another account's line, or one outside the reader's groups' scope, "
    "is not found. See docs/export-and-tail.md.",
    response_model=schemas.LineContext,
)
async def line_context(
    request: Request,
    session: SessionDep,
    account_id: AccountId,
    principal: CurrentPrincipal,
    line: Annotated[Text, Query(description="The line's `_id`")] = None,
    before: Annotated[Text, Query(description="Lines before it, 0 to 100 (default 20)")] = None,
    after: Annotated[Text, Query(description="Lines after it, 0 to 100 (default 20)")] = None,
    around: Annotated[
        Text,
        Query(
            description="Whose lines: `source` (the same host and app, the default), `host` "
            "(the same host, any app) or `account` (every line of the account)"
        ),
    ] = None,
) -> Response:
    # A person in groups sees only their scope (docs/people.md, "Groups").
    parsed = context.parse_context_request(
        line=line,
        before=before,
        after=after,
        scope_query=scoped_query(None, principal.scope),
        around=around,
    )

    def work(reader: PageReader) -> bytes | None:
        found = context.context_of(reader=reader, account_id=account_id, request=parsed)
        return None if found is None else service.encode(found)

    body = await run_off_loop(
        database=app_state(request).db, session=session, account_id=account_id, page=work
    )
    if body is None:
        raise NotFound("No such line")
    return Response(content=body, media_type="application/json")

"""HTTP for pipelines and their nodes: parse, call the service, wrap in the envelope.

Registered after the gateway-route router, so ``/v3/pipeline/gateway-route`` is never
taken for a pipeline id.
"""

from __future__ import annotations

from typing import Annotated, Any, Final

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from tidegate.api.envelope import Envelope, SelfLinks, envelope, link
from tidegate.api.raw_json import envelope_meta, enveloped
from tidegate.api.session import SessionDep
from tidegate.app_state import app_state
from tidegate.auth.dependencies import AccountId
from tidegate.kit.destination_guard import DestinationPolicy, policy_from_setting
from tidegate.pipelines import node_service, schemas, service
from tidegate.pipelines.alert_endpoints import router as alerts_router
from tidegate.pipelines.paths import ERRORS, NodeIdPath, PipelineIdPath

router = APIRouter(prefix="/v3/pipeline", tags=["Pipelines"], responses=ERRORS)

PIPELINES = "/v3/pipeline"
PIPELINE = PIPELINES + "/{pipeline_id}"
PIPELINE_LINKS = SelfLinks(
    list=link("get", PIPELINES),
    detail=link("get", PIPELINE),
    update=link("patch", PIPELINE),
    replace=link("put", PIPELINE),
    create=link("post", PIPELINES),
)
PIPELINE_RELATED = {
    "sources": PIPELINE + "/source",
    "transforms": PIPELINE + "/transform",
    "sinks": PIPELINE + "/sink",
    "publish": PIPELINE + "/publish",
}
# The platform's path segment of each kind, then the older aliases kept working.
NODE_PATHS: Final[dict[schemas.NodeKind, tuple[str, ...]]] = {
    "source": ("source",),
    "processor": ("transform", "processor"),
    "destination": ("sink", "destination"),
}


def _node_links(kind: schemas.NodeKind) -> SelfLinks:
    segment = NODE_PATHS[kind][0]
    one = f"{PIPELINE}/{segment}/{{node_id}}"
    return SelfLinks(
        list=link("get", f"{PIPELINE}/{segment}"),
        detail=link("get", one),
        update=link("patch", one),
        replace=link("put", one),
        create=link("post", f"{PIPELINE}/{segment}"),
    )


NODE_LINKS: Final = {kind: _node_links(kind) for kind in NODE_PATHS}
NODE_META: Final = {
    kind: envelope_meta(type=kind, pk="id", links=NODE_LINKS[kind], related={"pipeline": PIPELINE})
    for kind in NODE_PATHS
}
PIPELINES_META: Final = envelope_meta(type="pipeline", pk="id", links=PIPELINE_LINKS)
PIPELINE_META: Final = envelope_meta(
    type="pipeline", pk="id", links=PIPELINE_LINKS, related=PIPELINE_RELATED
)


def _pipeline(data: schemas.PipelineDetail) -> Envelope[schemas.PipelineDetail]:
    return envelope(data, type="pipeline", pk="id", links=PIPELINE_LINKS, related=PIPELINE_RELATED)


def _node(kind: schemas.NodeKind, data: schemas.Node) -> Envelope[schemas.Node]:
    return envelope(
        data, type=kind, pk="id", links=NODE_LINKS[kind], related={"pipeline": PIPELINE}
    )


# Pipelines


# Raw rows straight to JSON, no session, no models (api/raw_json.py).
@router.get(
    "",
    summary="List the account's pipelines",
    response_model=Envelope[list[schemas.Pipeline]],
)
async def list_pipelines(request: Request, account_id: AccountId) -> Response:
    data = await service.list_pipelines(db=app_state(request).db, account_id=account_id)
    return enveloped(PIPELINES_META, data)


@router.post("", status_code=201, summary="Create a pipeline")
async def create_pipeline(
    body: schemas.PipelineCreate, session: SessionDep, account_id: AccountId
) -> Envelope[schemas.PipelineDetail]:
    return _pipeline(
        await service.create_pipeline(session=session, account_id=account_id, body=body)
    )


@router.get(
    "/{pipeline_id}",
    summary="Get a pipeline with its nodes",
    response_model=Envelope[schemas.PipelineDetail],
)
async def get_pipeline(
    pipeline_id: PipelineIdPath, request: Request, account_id: AccountId
) -> Response:
    state = app_state(request)
    data = await service.read_pipeline(
        db=state.db, sealer=state.sealer, account_id=account_id, pipeline_id=pipeline_id
    )
    return enveloped(PIPELINE_META, data)


@router.put("/{pipeline_id}", summary="Replace a pipeline's fields (its nodes stay)")
async def replace_pipeline(
    pipeline_id: PipelineIdPath,
    body: schemas.PipelineReplace,
    session: SessionDep,
    account_id: AccountId,
) -> Envelope[schemas.PipelineDetail]:
    return _pipeline(
        await service.replace_pipeline(
            session=session, account_id=account_id, pipeline_id=pipeline_id, body=body
        )
    )


@router.post(
    "/{pipeline_id}/publish",
    summary="Publish the draft: it becomes the revision that runs",
    description="Checks the draft's graph and every node's configuration, then makes it "
    "the running revision. Nodes with a loose end (no inputs, or an output nobody takes) "
    "are refused unless `allow_unconnected_edges=true`. The body, if any, is `{}`.",
)
async def publish_pipeline(
    pipeline_id: PipelineIdPath,
    session: SessionDep,
    account_id: AccountId,
    query: Annotated[schemas.PublishQuery, Depends()],
    body: schemas.PublishBody | None = None,
) -> Envelope[schemas.PipelineDetail]:
    return _pipeline(
        await service.publish(
            session=session,
            account_id=account_id,
            pipeline_id=pipeline_id,
            allow_unconnected_edges=query.allow_unconnected_edges,
        )
    )


@router.patch("/{pipeline_id}", summary="Change some of a pipeline's fields")
async def update_pipeline(
    pipeline_id: PipelineIdPath,
    body: schemas.PipelineUpdate,
    session: SessionDep,
    account_id: AccountId,
) -> Envelope[schemas.PipelineDetail]:
    return _pipeline(
        await service.update_pipeline(
            session=session, account_id=account_id, pipeline_id=pipeline_id, body=body
        )
    )


@router.delete("/{pipeline_id}", summary="Delete a pipeline and its nodes")
async def delete_pipeline(
    pipeline_id: PipelineIdPath, session: SessionDep, account_id: AccountId
) -> Envelope[schemas.PipelineDetail]:
    return _pipeline(
        await service.delete_pipeline(
            session=session, account_id=account_id, pipeline_id=pipeline_id
        )
    )


# Nodes: the same five operations for each kind, generated once so the three kinds
# cannot drift apart. Only the kind, its body models and the wording differ.


def _destinations(request: Request) -> DestinationPolicy:
    """The operator's allow-list for http destinations (``TIDEGATE_DESTINATION_ALLOW``)."""
    return policy_from_setting(app_state(request).settings.destination_allow)


def _add_node_routes(
    kind: schemas.NodeKind,
    *,
    plural: str,
    create_model: type[Any],
    update_model: type[Any],
    create_summary: str,
) -> None:
    # The reads: raw records straight to JSON (api/raw_json.py).
    async def list_nodes(
        pipeline_id: PipelineIdPath, request: Request, account_id: AccountId
    ) -> Response:
        state = app_state(request)
        data = await node_service.read_nodes(
            db=state.db, sealer=state.sealer, account_id=account_id, pipeline_id=pipeline_id,
            kind=kind,
        )  # fmt: skip
        return enveloped(NODE_META[kind], data)

    async def create_node(
        request: Request,
        pipeline_id: PipelineIdPath,
        body: Any,
        session: SessionDep,
        account_id: AccountId,
    ) -> Envelope[schemas.Node]:
        data = await node_service.create_node(
            session=session,
            account_id=account_id,
            pipeline_id=pipeline_id,
            kind=kind,
            body=body,
            destinations=_destinations(request),
        )
        return _node(kind, data)

    async def get_node(
        pipeline_id: PipelineIdPath, node_id: NodeIdPath, request: Request, account_id: AccountId
    ) -> Response:
        state = app_state(request)
        data = await node_service.read_node(
            db=state.db, sealer=state.sealer, account_id=account_id, pipeline_id=pipeline_id,
            kind=kind, node_id=node_id,
        )  # fmt: skip
        return enveloped(NODE_META[kind], data)

    def _changing(save: Any) -> Any:
        """The PUT and PATCH handlers differ only in the service function they call."""

        async def change_node(
            request: Request,
            pipeline_id: PipelineIdPath,
            node_id: NodeIdPath,
            body: Any,
            session: SessionDep,
            account_id: AccountId,
        ) -> Envelope[schemas.Node]:
            data = await save(
                session=session,
                account_id=account_id,
                pipeline_id=pipeline_id,
                kind=kind,
                node_id=node_id,
                body=body,
                destinations=_destinations(request),
            )
            return _node(kind, data)

        return change_node

    update_node = _changing(node_service.update_node)
    replace_node = _changing(node_service.replace_node)

    async def delete_node(
        pipeline_id: PipelineIdPath, node_id: NodeIdPath, session: SessionDep, account_id: AccountId
    ) -> Envelope[schemas.Node]:
        data = await node_service.delete_node(
            session=session,
            account_id=account_id,
            pipeline_id=pipeline_id,
            kind=kind,
            node_id=node_id,
        )
        return _node(kind, data)

    # The body models differ by kind; FastAPI reads them from the annotations.
    create_node.__annotations__["body"] = create_model
    replace_node.__annotations__["body"] = create_model
    update_node.__annotations__["body"] = update_model
    # The reads answer JSON bytes: their documents' models are declared here.
    read_models: dict[Any, dict[str, Any]] = {
        list_nodes: {"response_model": Envelope[list[schemas.Node]]},
        get_node: {"response_model": Envelope[schemas.Node]},
    }
    for index, segment in enumerate(NODE_PATHS[kind]):
        alias = index > 0  # older paths: served, not documented twice
        suffix = f"_via_{segment}" if alias else ""
        collection = f"/{{pipeline_id}}/{segment}"
        item = f"{collection}/{{node_id}}"
        for path, endpoint, methods, name, summary, status in (
            (collection, list_nodes, "GET", f"list_{plural}", f"List a pipeline's {plural}", 200),
            (collection, create_node, "POST", f"create_{kind}", create_summary, 201),
            (item, get_node, "GET", f"get_{kind}", f"Get a {kind}", 200),
            (item, replace_node, "PUT", f"replace_{kind}", f"Replace a {kind}", 200),
            (item, update_node, "PATCH", f"update_{kind}", f"Change some of a {kind}", 200),
            (item, delete_node, "DELETE", f"delete_{kind}", f"Delete a {kind}", 200),
        ):
            router.add_api_route(
                path,
                endpoint,
                methods=[methods],
                name=name + suffix,
                summary=summary,
                status_code=status,
                include_in_schema=not alias,
                **read_models.get(endpoint, {}),
            )


_add_node_routes(
    "source",
    plural="sources",
    create_model=schemas.SourceCreate,
    update_model=schemas.SourceUpdate,
    create_summary="Add a source (an `http` source without a route gets one of its own)",
)
_add_node_routes(
    "processor",
    plural="processors",
    create_model=schemas.ProcessorCreate,
    update_model=schemas.ProcessorUpdate,
    create_summary="Add a processor (throttle needs the account's throttle-processor feature)",
)
_add_node_routes(
    "destination",
    plural="destinations",
    create_model=schemas.DestinationCreate,
    update_model=schemas.DestinationUpdate,
    create_summary="Add a destination",
)


# Pipeline alerts: served under the pipelines' prefix with the same permissions.
router.include_router(alerts_router)

"""HTTP for pipelines and their nodes: parse, call the service, wrap in the envelope.

Registered after the gateway-route router, so ``/v3/pipeline/gateway-route`` is never
taken for a pipeline id.
"""

from __future__ import annotations

from typing import Annotated, Any, Final

from fastapi import APIRouter, Path, Request

from tidegate.api.envelope import Envelope, SelfLinks, envelope, link
from tidegate.api.error_models import V3_ERRORS, V3Error
from tidegate.app_state import app_state
from tidegate.auth.dependencies import AccountId
from tidegate.db.session import SessionDep
from tidegate.pipelines import schemas, service
from tidegate.runtime.destination_guard import DestinationPolicy, policy_from_setting

ERRORS: Final[dict[int | str, dict[str, Any]]] = {
    **V3_ERRORS,
    409: {"model": V3Error, "description": "Conflict with the current state"},
}

router = APIRouter(prefix="/v3/pipeline", tags=["Pipelines"], responses=ERRORS)

ID_PATTERN: Final = r"^[0-9A-Za-z_-]+$"
PipelineIdPath = Annotated[
    str,
    Path(min_length=1, max_length=36, pattern=ID_PATTERN, description="The pipeline's id"),
]
NodeIdPath = Annotated[
    str, Path(min_length=1, max_length=36, pattern=ID_PATTERN, description="The node's id")
]

PIPELINES = "/v3/pipeline"
PIPELINE = PIPELINES + "/{pipeline_id}"
PIPELINE_LINKS = SelfLinks(
    list=link("get", PIPELINES),
    detail=link("get", PIPELINE),
    update=link("patch", PIPELINE),
    replace=None,
    create=link("post", PIPELINES),
)
PIPELINE_RELATED = {
    "sources": PIPELINE + "/source",
    "processors": PIPELINE + "/processor",
    "destinations": PIPELINE + "/destination",
}


def _node_links(kind: schemas.NodeKind) -> SelfLinks:
    one = f"{PIPELINE}/{kind}/{{node_id}}"
    return SelfLinks(
        list=link("get", f"{PIPELINE}/{kind}"),
        detail=link("get", one),
        update=link("patch", one),
        replace=None,
        create=link("post", f"{PIPELINE}/{kind}"),
    )


NODE_LINKS: Final = {kind: _node_links(kind) for kind in ("source", "processor", "destination")}


def _pipeline(data: schemas.PipelineDetail) -> Envelope[schemas.PipelineDetail]:
    return envelope(data, type="pipeline", pk="id", links=PIPELINE_LINKS, related=PIPELINE_RELATED)


def _node(kind: schemas.NodeKind, data: schemas.Node) -> Envelope[schemas.Node]:
    return envelope(
        data, type=kind, pk="id", links=NODE_LINKS[kind], related={"pipeline": PIPELINE}
    )


def _nodes(kind: schemas.NodeKind, data: list[schemas.Node]) -> Envelope[list[schemas.Node]]:
    return envelope(
        data, type=kind, pk="id", links=NODE_LINKS[kind], related={"pipeline": PIPELINE}
    )


# Pipelines


@router.get("", summary="List the account's pipelines")
async def list_pipelines(
    session: SessionDep, account_id: AccountId
) -> Envelope[list[schemas.Pipeline]]:
    data = await service.list_pipelines(session=session, account_id=account_id)
    return envelope(data, type="pipeline", pk="id", links=PIPELINE_LINKS)


@router.post("", status_code=201, summary="Create a pipeline")
async def create_pipeline(
    body: schemas.PipelineCreate, session: SessionDep, account_id: AccountId
) -> Envelope[schemas.PipelineDetail]:
    return _pipeline(
        await service.create_pipeline(session=session, account_id=account_id, body=body)
    )


@router.get("/{pipeline_id}", summary="Get a pipeline with its nodes")
async def get_pipeline(
    pipeline_id: PipelineIdPath, session: SessionDep, account_id: AccountId
) -> Envelope[schemas.PipelineDetail]:
    return _pipeline(
        await service.get_pipeline(session=session, account_id=account_id, pipeline_id=pipeline_id)
    )


@router.patch("/{pipeline_id}", summary="Change a pipeline's title or description")
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
    async def list_nodes(
        pipeline_id: PipelineIdPath, session: SessionDep, account_id: AccountId
    ) -> Envelope[list[schemas.Node]]:
        data = await service.list_nodes(
            session=session, account_id=account_id, pipeline_id=pipeline_id, kind=kind
        )
        return _nodes(kind, data)

    async def create_node(
        request: Request,
        pipeline_id: PipelineIdPath,
        body: Any,
        session: SessionDep,
        account_id: AccountId,
    ) -> Envelope[schemas.Node]:
        data = await service.create_node(
            session=session,
            account_id=account_id,
            pipeline_id=pipeline_id,
            kind=kind,
            body=body,
            destinations=_destinations(request),
        )
        return _node(kind, data)

    async def get_node(
        pipeline_id: PipelineIdPath, node_id: NodeIdPath, session: SessionDep, account_id: AccountId
    ) -> Envelope[schemas.Node]:
        data = await service.get_node(
            session=session,
            account_id=account_id,
            pipeline_id=pipeline_id,
            kind=kind,
            node_id=node_id,
        )
        return _node(kind, data)

    async def update_node(
        request: Request,
        pipeline_id: PipelineIdPath,
        node_id: NodeIdPath,
        body: Any,
        session: SessionDep,
        account_id: AccountId,
    ) -> Envelope[schemas.Node]:
        data = await service.update_node(
            session=session,
            account_id=account_id,
            pipeline_id=pipeline_id,
            kind=kind,
            node_id=node_id,
            body=body,
            destinations=_destinations(request),
        )
        return _node(kind, data)

    async def delete_node(
        pipeline_id: PipelineIdPath, node_id: NodeIdPath, session: SessionDep, account_id: AccountId
    ) -> Envelope[schemas.Node]:
        data = await service.delete_node(
            session=session,
            account_id=account_id,
            pipeline_id=pipeline_id,
            kind=kind,
            node_id=node_id,
        )
        return _node(kind, data)

    # The body models differ by kind; FastAPI reads them from the annotations.
    create_node.__annotations__["body"] = create_model
    update_node.__annotations__["body"] = update_model
    collection, item = f"/{{pipeline_id}}/{kind}", f"/{{pipeline_id}}/{kind}/{{node_id}}"
    router.add_api_route(
        collection,
        list_nodes,
        methods=["GET"],
        name=f"list_{plural}",
        summary=f"List a pipeline's {plural}",
    )
    router.add_api_route(
        collection,
        create_node,
        methods=["POST"],
        name=f"create_{kind}",
        status_code=201,
        summary=create_summary,
    )
    router.add_api_route(
        item, get_node, methods=["GET"], name=f"get_{kind}", summary=f"Get a {kind}"
    )
    router.add_api_route(
        item, update_node, methods=["PATCH"], name=f"update_{kind}", summary=f"Change a {kind}"
    )
    router.add_api_route(
        item, delete_node, methods=["DELETE"], name=f"delete_{kind}", summary=f"Delete a {kind}"
    )


_add_node_routes(
    "source",
    plural="sources",
    create_model=schemas.SourceCreate,
    update_model=schemas.SourceUpdate,
    create_summary="Add an HTTP source",
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

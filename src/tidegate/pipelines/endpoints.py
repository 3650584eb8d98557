"""HTTP for pipelines and their nodes: parse, call the service, wrap in the envelope.

Registered after the gateway-route router, so ``/v3/pipeline/gateway-route`` is never
taken for a pipeline id.
"""

from __future__ import annotations

from typing import Annotated, Any, Final

from fastapi import APIRouter, Path

from tidegate.api.envelope import Envelope, SelfLinks, envelope, link
from tidegate.api.error_models import V3_ERRORS, V3Error
from tidegate.auth.dependencies import AccountId
from tidegate.db.session import SessionDep
from tidegate.pipelines import schemas, service

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


# Sources


@router.get("/{pipeline_id}/source", summary="List a pipeline's sources")
async def list_sources(
    pipeline_id: PipelineIdPath, session: SessionDep, account_id: AccountId
) -> Envelope[list[schemas.Node]]:
    data = await service.list_nodes(
        session=session, account_id=account_id, pipeline_id=pipeline_id, kind="source"
    )
    return _nodes("source", data)


@router.post("/{pipeline_id}/source", status_code=201, summary="Add an HTTP source")
async def create_source(
    pipeline_id: PipelineIdPath,
    body: schemas.SourceCreate,
    session: SessionDep,
    account_id: AccountId,
) -> Envelope[schemas.Node]:
    data = await service.create_node(
        session=session, account_id=account_id, pipeline_id=pipeline_id, kind="source", body=body
    )
    return _node("source", data)


@router.get("/{pipeline_id}/source/{node_id}", summary="Get a source")
async def get_source(
    pipeline_id: PipelineIdPath, node_id: NodeIdPath, session: SessionDep, account_id: AccountId
) -> Envelope[schemas.Node]:
    data = await service.get_node(
        session=session,
        account_id=account_id,
        pipeline_id=pipeline_id,
        kind="source",
        node_id=node_id,
    )
    return _node("source", data)


@router.patch("/{pipeline_id}/source/{node_id}", summary="Change a source")
async def update_source(
    pipeline_id: PipelineIdPath,
    node_id: NodeIdPath,
    body: schemas.SourceUpdate,
    session: SessionDep,
    account_id: AccountId,
) -> Envelope[schemas.Node]:
    data = await service.update_node(
        session=session,
        account_id=account_id,
        pipeline_id=pipeline_id,
        kind="source",
        node_id=node_id,
        body=body,
    )
    return _node("source", data)


@router.delete("/{pipeline_id}/source/{node_id}", summary="Delete a source")
async def delete_source(
    pipeline_id: PipelineIdPath, node_id: NodeIdPath, session: SessionDep, account_id: AccountId
) -> Envelope[schemas.Node]:
    data = await service.delete_node(
        session=session,
        account_id=account_id,
        pipeline_id=pipeline_id,
        kind="source",
        node_id=node_id,
    )
    return _node("source", data)


# Processors


@router.get("/{pipeline_id}/processor", summary="List a pipeline's processors")
async def list_processors(
    pipeline_id: PipelineIdPath, session: SessionDep, account_id: AccountId
) -> Envelope[list[schemas.Node]]:
    data = await service.list_nodes(
        session=session, account_id=account_id, pipeline_id=pipeline_id, kind="processor"
    )
    return _nodes("processor", data)


@router.post(
    "/{pipeline_id}/processor",
    status_code=201,
    summary="Add a processor (throttle needs the account's throttle-processor feature)",
)
async def create_processor(
    pipeline_id: PipelineIdPath,
    body: schemas.ProcessorCreate,
    session: SessionDep,
    account_id: AccountId,
) -> Envelope[schemas.Node]:
    data = await service.create_node(
        session=session,
        account_id=account_id,
        pipeline_id=pipeline_id,
        kind="processor",
        body=body,
    )
    return _node("processor", data)


@router.get("/{pipeline_id}/processor/{node_id}", summary="Get a processor")
async def get_processor(
    pipeline_id: PipelineIdPath, node_id: NodeIdPath, session: SessionDep, account_id: AccountId
) -> Envelope[schemas.Node]:
    data = await service.get_node(
        session=session,
        account_id=account_id,
        pipeline_id=pipeline_id,
        kind="processor",
        node_id=node_id,
    )
    return _node("processor", data)


@router.patch("/{pipeline_id}/processor/{node_id}", summary="Change a processor")
async def update_processor(
    pipeline_id: PipelineIdPath,
    node_id: NodeIdPath,
    body: schemas.ProcessorUpdate,
    session: SessionDep,
    account_id: AccountId,
) -> Envelope[schemas.Node]:
    data = await service.update_node(
        session=session,
        account_id=account_id,
        pipeline_id=pipeline_id,
        kind="processor",
        node_id=node_id,
        body=body,
    )
    return _node("processor", data)


@router.delete("/{pipeline_id}/processor/{node_id}", summary="Delete a processor")
async def delete_processor(
    pipeline_id: PipelineIdPath, node_id: NodeIdPath, session: SessionDep, account_id: AccountId
) -> Envelope[schemas.Node]:
    data = await service.delete_node(
        session=session,
        account_id=account_id,
        pipeline_id=pipeline_id,
        kind="processor",
        node_id=node_id,
    )
    return _node("processor", data)


# Destinations


@router.get("/{pipeline_id}/destination", summary="List a pipeline's destinations")
async def list_destinations(
    pipeline_id: PipelineIdPath, session: SessionDep, account_id: AccountId
) -> Envelope[list[schemas.Node]]:
    data = await service.list_nodes(
        session=session, account_id=account_id, pipeline_id=pipeline_id, kind="destination"
    )
    return _nodes("destination", data)


@router.post("/{pipeline_id}/destination", status_code=201, summary="Add a destination")
async def create_destination(
    pipeline_id: PipelineIdPath,
    body: schemas.DestinationCreate,
    session: SessionDep,
    account_id: AccountId,
) -> Envelope[schemas.Node]:
    data = await service.create_node(
        session=session,
        account_id=account_id,
        pipeline_id=pipeline_id,
        kind="destination",
        body=body,
    )
    return _node("destination", data)


@router.get("/{pipeline_id}/destination/{node_id}", summary="Get a destination")
async def get_destination(
    pipeline_id: PipelineIdPath, node_id: NodeIdPath, session: SessionDep, account_id: AccountId
) -> Envelope[schemas.Node]:
    data = await service.get_node(
        session=session,
        account_id=account_id,
        pipeline_id=pipeline_id,
        kind="destination",
        node_id=node_id,
    )
    return _node("destination", data)


@router.patch("/{pipeline_id}/destination/{node_id}", summary="Change a destination")
async def update_destination(
    pipeline_id: PipelineIdPath,
    node_id: NodeIdPath,
    body: schemas.DestinationUpdate,
    session: SessionDep,
    account_id: AccountId,
) -> Envelope[schemas.Node]:
    data = await service.update_node(
        session=session,
        account_id=account_id,
        pipeline_id=pipeline_id,
        kind="destination",
        node_id=node_id,
        body=body,
    )
    return _node("destination", data)


@router.delete("/{pipeline_id}/destination/{node_id}", summary="Delete a destination")
async def delete_destination(
    pipeline_id: PipelineIdPath, node_id: NodeIdPath, session: SessionDep, account_id: AccountId
) -> Envelope[schemas.Node]:
    data = await service.delete_node(
        session=session,
        account_id=account_id,
        pipeline_id=pipeline_id,
        kind="destination",
        node_id=node_id,
    )
    return _node("destination", data)

"""Pipeline rules: pipelines and their nodes, validated on every save. No HTTP here.

Every change to a pipeline or to one of its nodes bumps ``Pipeline.revision``, so a
running worker can tell cheaply that its compiled graph is stale.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.components.catalogue import REGISTRY
from tidegate.components.validation import node_outputs, validate_user_config, vet_config
from tidegate.enterprise.service import has_feature
from tidegate.errors import Conflict, ErrorItem, Forbidden, NotFound, ValidationFailed
from tidegate.models import Pipeline, PipelineNode
from tidegate.models.base import new_uuid, utcnow
from tidegate.pipelines import repository, schemas
from tidegate.pipelines.graph import GraphNode, refuse_if_depended_on, validate_graph
from tidegate.runtime.destination_guard import DestinationPolicy

MAX_PIPELINES_PER_ACCOUNT: Final = 1_000
MAX_NODES_PER_PIPELINE: Final = 200
_PUBLIC_ONLY: Final = DestinationPolicy()


# Shapes


def pipeline_schema(pipeline: Pipeline) -> schemas.Pipeline:
    return schemas.Pipeline(
        id=pipeline.id,
        account_id=pipeline.account_id,
        title=pipeline.title,
        description=pipeline.description,
        revision=pipeline.revision,
        created_at=pipeline.created_at,
        updated_at=pipeline.updated_at,
    )


def node_schema(node: PipelineNode) -> schemas.Node:
    return schemas.Node(
        id=node.id,
        pipeline_id=node.pipeline_id,
        kind=node.kind,
        type=node.type,
        title=node.title,
        inputs=list(node.inputs or []),
        user_config=dict(node.user_config or {}),
        gateway_route_id=node.gateway_route_id,
        created_at=node.created_at,
        updated_at=node.updated_at,
    )


def graph_node(node: PipelineNode) -> GraphNode:
    return GraphNode(
        id=node.id,
        kind=node.kind,
        type=node.type,
        inputs=tuple(node.inputs or ()),
        outputs=node_outputs(
            kind=node.kind, type_=node.type, user_config=dict(node.user_config or {})
        ),
    )


def _detail(pipeline: Pipeline, nodes: Sequence[PipelineNode]) -> schemas.PipelineDetail:
    return schemas.PipelineDetail(
        **pipeline_schema(pipeline).model_dump(), nodes=[node_schema(node) for node in nodes]
    )


def _touch(pipeline: Pipeline) -> None:
    pipeline.revision = (pipeline.revision or 0) + 1
    pipeline.updated_at = utcnow()


# Pipelines


async def _own_pipeline(
    *, session: AsyncSession, account_id: str, pipeline_id: str, for_update: bool = False
) -> Pipeline:
    pipeline = await repository.pipeline(
        session=session, account_id=account_id, pipeline_id=pipeline_id, for_update=for_update
    )
    if pipeline is None:
        raise NotFound(f"No pipeline {pipeline_id}")
    return pipeline


async def list_pipelines(*, session: AsyncSession, account_id: str) -> list[schemas.Pipeline]:
    pipelines = await repository.pipelines_of(session=session, account_id=account_id)
    return [pipeline_schema(pipeline) for pipeline in pipelines]


async def get_pipeline(
    *, session: AsyncSession, account_id: str, pipeline_id: str
) -> schemas.PipelineDetail:
    pipeline = await _own_pipeline(session=session, account_id=account_id, pipeline_id=pipeline_id)
    return _detail(pipeline, await repository.nodes_of(session=session, pipeline_id=pipeline.id))


async def create_pipeline(
    *, session: AsyncSession, account_id: str, body: schemas.PipelineCreate
) -> schemas.PipelineDetail:
    if await repository.count_pipelines(session=session, account_id=account_id) >= (
        MAX_PIPELINES_PER_ACCOUNT
    ):
        raise Conflict(f"An account holds at most {MAX_PIPELINES_PER_ACCOUNT} pipelines")
    now = utcnow()
    pipeline = Pipeline(
        id=new_uuid(),
        account_id=account_id,
        title=body.title,
        description=body.description,
        revision=1,
        created_at=now,
        updated_at=now,
    )
    session.add(pipeline)
    await session.flush()
    return _detail(pipeline, [])


async def update_pipeline(
    *, session: AsyncSession, account_id: str, pipeline_id: str, body: schemas.PipelineUpdate
) -> schemas.PipelineDetail:
    pipeline = await _own_pipeline(
        session=session, account_id=account_id, pipeline_id=pipeline_id, for_update=True
    )
    given = body.model_fields_set
    if "title" in given and body.title is not None:
        pipeline.title = body.title
    if "description" in given:
        pipeline.description = body.description
    _touch(pipeline)
    await session.flush()
    return _detail(pipeline, await repository.nodes_of(session=session, pipeline_id=pipeline.id))


async def delete_pipeline(
    *, session: AsyncSession, account_id: str, pipeline_id: str
) -> schemas.PipelineDetail:
    """Deletes the pipeline with its nodes; answers what was deleted."""
    pipeline = await _own_pipeline(
        session=session, account_id=account_id, pipeline_id=pipeline_id, for_update=True
    )
    nodes = await repository.nodes_of(session=session, pipeline_id=pipeline.id)
    gone = _detail(pipeline, nodes)
    await repository.delete_pipeline(session=session, pipeline_id=pipeline.id)
    for row in (*nodes, pipeline):
        session.expunge(row)
    return gone


# Nodes


async def _require_feature(
    *, session: AsyncSession, account_id: str, kind: str, type_: str
) -> None:
    """A type whose component needs a feature flag the account lacks: 403 on ``/type``."""
    component = REGISTRY.find(kind, type_)
    feature = None if component is None else component.needs.feature
    if feature is None:
        return
    if not await has_feature(session=session, account_id=account_id, name=feature):
        message = (
            f"The {component.type if component else type_} {kind} is in beta and is not "
            f"enabled for this account: enable the '{feature}' feature first"
        )
        raise Forbidden(
            message,
            context="body",
            errors=[
                ErrorItem(
                    keyword="feature",
                    message=message,
                    instance_path="/type",
                    params={"feature": feature},
                )
            ],
        )


async def _own_route_id(*, session: AsyncSession, account_id: str, gateway_route_id: str) -> str:
    route = await repository.gateway_route(
        session=session, account_id=account_id, gateway_route_id=gateway_route_id
    )
    if route is None:
        message = f"gateway route {gateway_route_id} does not exist"
        raise ValidationFailed(
            message,
            context="body",
            errors=[
                ErrorItem(
                    keyword="exists",
                    message=message,
                    instance_path="/gateway_route_id",
                    params={"gateway_route_id": gateway_route_id},
                )
            ],
        )
    return route.id


def _find(nodes: Sequence[PipelineNode], kind: schemas.NodeKind, node_id: str) -> PipelineNode:
    for node in nodes:
        if node.id == node_id and node.kind == kind:
            return node
    raise NotFound(f"No {kind} {node_id} in this pipeline")


async def list_nodes(
    *, session: AsyncSession, account_id: str, pipeline_id: str, kind: schemas.NodeKind
) -> list[schemas.Node]:
    pipeline = await _own_pipeline(session=session, account_id=account_id, pipeline_id=pipeline_id)
    nodes = await repository.nodes_of(session=session, pipeline_id=pipeline.id)
    return [node_schema(node) for node in nodes if node.kind == kind]


async def get_node(
    *,
    session: AsyncSession,
    account_id: str,
    pipeline_id: str,
    kind: schemas.NodeKind,
    node_id: str,
) -> schemas.Node:
    pipeline = await _own_pipeline(session=session, account_id=account_id, pipeline_id=pipeline_id)
    nodes = await repository.nodes_of(session=session, pipeline_id=pipeline.id)
    return node_schema(_find(nodes, kind, node_id))


async def create_node(
    *,
    session: AsyncSession,
    account_id: str,
    pipeline_id: str,
    kind: schemas.NodeKind,
    body: schemas.NodeCreate,
    destinations: DestinationPolicy = _PUBLIC_ONLY,
) -> schemas.Node:
    pipeline = await _own_pipeline(
        session=session, account_id=account_id, pipeline_id=pipeline_id, for_update=True
    )
    await _require_feature(session=session, account_id=account_id, kind=kind, type_=body.type)
    config = validate_user_config(kind=kind, type_=body.type, user_config=body.user_config)
    await vet_config(config, kind=kind, type_=body.type, policy=destinations)
    route_id = None
    if isinstance(body, schemas.SourceCreate) and body.gateway_route_id is not None:
        route_id = await _own_route_id(
            session=session, account_id=account_id, gateway_route_id=body.gateway_route_id
        )
    elif (
        isinstance(body, schemas.SourceCreate) and REGISTRY.get(kind, body.type).needs.gateway_route
    ):
        message = f"a {body.type} source needs gateway_route_id"
        raise ValidationFailed(
            message,
            context="body",
            errors=[
                ErrorItem(
                    keyword="required",
                    message=message,
                    instance_path="",
                    schema_path="#/required",
                    params={"missingProperty": "gateway_route_id"},
                )
            ],
        )
    nodes = await repository.nodes_of(session=session, pipeline_id=pipeline.id)
    if len(nodes) >= MAX_NODES_PER_PIPELINE:
        raise Conflict(f"A pipeline holds at most {MAX_NODES_PER_PIPELINE} nodes")
    now = utcnow()
    node = PipelineNode(
        id=new_uuid(),
        pipeline_id=pipeline.id,
        account_id=account_id,
        kind=kind,
        type=body.type,
        title=body.title,
        inputs=list(body.inputs),
        user_config=body.user_config,
        gateway_route_id=route_id,
        created_at=now,
        updated_at=now,
    )
    validate_graph([*map(graph_node, nodes), graph_node(node)], changed=node.id)
    session.add(node)
    _touch(pipeline)
    await session.flush()
    return node_schema(node)


async def update_node(
    *,
    session: AsyncSession,
    account_id: str,
    pipeline_id: str,
    kind: schemas.NodeKind,
    node_id: str,
    body: schemas.NodeUpdate,
    destinations: DestinationPolicy = _PUBLIC_ONLY,
) -> schemas.Node:
    pipeline = await _own_pipeline(
        session=session, account_id=account_id, pipeline_id=pipeline_id, for_update=True
    )
    nodes = await repository.nodes_of(session=session, pipeline_id=pipeline.id)
    node = _find(nodes, kind, node_id)
    given = body.model_fields_set
    new_type = body.type if "type" in given and body.type is not None else node.type
    if REGISTRY.find(kind, new_type) is not REGISTRY.find(kind, node.type):
        await _require_feature(session=session, account_id=account_id, kind=kind, type_=new_type)
    new_config = (
        body.user_config
        if "user_config" in given and body.user_config is not None
        else dict(node.user_config or {})
    )
    config = validate_user_config(kind=kind, type_=new_type, user_config=new_config)
    await vet_config(config, kind=kind, type_=new_type, policy=destinations)
    route_id = node.gateway_route_id
    if (
        isinstance(body, schemas.SourceUpdate)
        and "gateway_route_id" in given
        and body.gateway_route_id is not None
    ):
        route_id = await _own_route_id(
            session=session, account_id=account_id, gateway_route_id=body.gateway_route_id
        )
    new_inputs = (
        list(body.inputs)
        if "inputs" in given and body.inputs is not None
        else list(node.inputs or [])
    )
    proposed = GraphNode(
        id=node.id,
        kind=kind,
        type=new_type,
        inputs=tuple(new_inputs),
        outputs=tuple(REGISTRY.get(kind, new_type).outputs(config)),
    )
    validate_graph(
        [proposed if other.id == node.id else graph_node(other) for other in nodes],
        changed=node.id,
    )
    node.type = new_type
    node.user_config = new_config
    node.inputs = new_inputs
    node.gateway_route_id = route_id
    if "title" in given:
        node.title = body.title
    node.updated_at = utcnow()
    _touch(pipeline)
    await session.flush()
    return node_schema(node)


async def delete_node(
    *,
    session: AsyncSession,
    account_id: str,
    pipeline_id: str,
    kind: schemas.NodeKind,
    node_id: str,
) -> schemas.Node:
    """Refuses (409, naming them) while other nodes take this one as an input."""
    pipeline = await _own_pipeline(
        session=session, account_id=account_id, pipeline_id=pipeline_id, for_update=True
    )
    nodes = await repository.nodes_of(session=session, pipeline_id=pipeline.id)
    node = _find(nodes, kind, node_id)
    refuse_if_depended_on(map(graph_node, nodes), node.id)
    gone = node_schema(node)
    await session.delete(node)
    _touch(pipeline)
    await session.flush()
    return gone

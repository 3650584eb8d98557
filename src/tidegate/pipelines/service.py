"""Pipeline rules: pipelines and their nodes (the draft), validated on every save, and
publishing the draft as the revision that runs. No HTTP here.

Every change to a pipeline's nodes bumps ``Pipeline.revision`` (the draft's revision);
``publish`` copies the draft's nodes into the published revision, which is what the data
plane runs. Pipelines and nodes carry a ``generation_id`` for optimistic concurrency.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Final

from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.auth.secrets import Sealer
from tidegate.components import validation
from tidegate.components.catalogue import REGISTRY
from tidegate.components.validation import validate_user_config
from tidegate.db.engine import Database
from tidegate.errors import Conflict, ErrorItem, NotFound, ValidationFailed
from tidegate.models import Pipeline, PipelineNode, PublishedPipelineNode
from tidegate.models.base import new_uuid, utcnow
from tidegate.pipelines import repository, schemas
from tidegate.pipelines.graph import GraphNode, unconnected, validate_graph
from tidegate.pipelines.sealed_config import open_config, open_config_with

MAX_PIPELINES_PER_ACCOUNT: Final = 1_000


def routed_source(type_: str) -> bool:
    """A source type that receives its events through a gateway route (created without
    one, such a source gets a route of its own: the platform's quickstart reads its id
    back)."""
    component = REGISTRY.find("source", type_)
    return component is not None and component.needs.gateway_route


# Shapes


def pipeline_data(pipeline: Pipeline) -> dict[str, Any]:
    """The pipeline's document (without nodes) as plain data (api/raw_json.py), from the
    ORM object or a raw record (``repository.pipelines_of``)."""
    return {
        "id": pipeline.id,
        "account_id": pipeline.account_id,
        "title": pipeline.title,
        "description": pipeline.description,
        "origin": pipeline.origin,
        "deploy_type": pipeline.deploy_type,
        "deployment_groups": list(pipeline.deployment_groups or []),
        "generation_id": pipeline.generation_id or 0,
        "revision": pipeline.revision,
        "published_revision": pipeline.published_revision,
        "published_at": pipeline.published_at,
        "has_unpublished_changes": pipeline.published_revision != pipeline.revision,
        "created_at": pipeline.created_at,
        "updated_at": pipeline.updated_at,
    }


def pipeline_schema(pipeline: Pipeline) -> schemas.Pipeline:
    return schemas.Pipeline(**pipeline_data(pipeline))


def node_outputs(
    kind: str, type_: str, node_id: str, user_config: dict[str, Any]
) -> list[schemas.NodeOutputRef]:
    """A processor's named outputs besides its main one (its component says which)."""
    names = validation.node_outputs(kind=kind, type_=type_, user_config=user_config)
    return [schemas.NodeOutputRef(id=f"{node_id}.{name}", label=name) for name in names]


def config_of(session: AsyncSession, node: PipelineNode | PublishedPipelineNode) -> dict[str, Any]:
    """The node's ``user_config``, opened (sealed at rest: ``pipelines.sealed_config``)."""
    return open_config(session, node.user_config_sealed, node_id=node.id)


def node_data(node: PipelineNode | Any, user_config: dict[str, Any]) -> dict[str, Any]:
    """The node's document as plain data (api/raw_json.py), from the ORM object or a raw
    record (``repository.node_records``) and its opened configuration."""
    outputs = validation.node_outputs(kind=node.kind, type_=node.type, user_config=user_config)
    return {
        "id": node.id,
        "pipeline_id": node.pipeline_id,
        "kind": node.kind,
        "type": node.type,
        "title": node.title,
        "description": node.description,
        "generation_id": node.generation_id or 0,
        "inputs": list(node.inputs or []),
        "user_config": user_config,
        "gateway_route_id": node.gateway_route_id,
        "outputs": [{"id": f"{node.id}.{name}", "label": name} for name in outputs],
        "created_at": node.created_at,
        "updated_at": node.updated_at,
    }


def node_schema(session: AsyncSession, node: PipelineNode) -> schemas.Node:
    return schemas.Node(**node_data(node, config_of(session, node)))


def graph_node(session: AsyncSession, node: PipelineNode) -> GraphNode:
    return GraphNode(
        id=node.id,
        kind=node.kind,
        type=node.type,
        inputs=tuple(node.inputs or ()),
        outputs=validation.node_outputs(
            kind=node.kind, type_=node.type, user_config=config_of(session, node)
        ),
    )


def detail_data(pipeline: Pipeline | Any, nodes: list[dict[str, Any]]) -> dict[str, Any]:
    """The pipeline's document with its nodes' (``node_data``) as plain data."""
    return {**pipeline_data(pipeline), "nodes": nodes}


def _detail(
    session: AsyncSession, pipeline: Pipeline, nodes: Sequence[PipelineNode]
) -> schemas.PipelineDetail:
    return schemas.PipelineDetail(
        **detail_data(pipeline, [node_data(node, config_of(session, node)) for node in nodes])
    )


def touch(pipeline: Pipeline) -> None:
    """A change to the draft's nodes."""
    pipeline.revision = (pipeline.revision or 0) + 1
    pipeline.updated_at = utcnow()


def check_generation(*, what: str, current: int, given: int | None) -> None:
    """409 when an update carries a generation_id other than the current one."""
    if given is None or given == current:
        return
    message = (
        f"generation_id {given} is stale: the {what} is at generation {current}; "
        "read it again and retry"
    )
    raise Conflict(
        message,
        context="body",
        errors=[
            ErrorItem(
                keyword="generation_id",
                message=message,
                instance_path="/generation_id",
                params={"current": current, "given": given},
            )
        ],
    )


def same_id(given: str | None, path_id: str, *, field: str = "id") -> None:
    """An id repeated in a body (``id``, ``gateway_route_id``) must be the path's; an
    empty or absent one is fine (the platform's clients send ``""`` on create)."""
    if given and given != path_id:
        message = f"{field} {given} in the body is not the path's {path_id}"
        raise ValidationFailed(
            message,
            context="body",
            errors=[
                ErrorItem(
                    keyword="const",
                    message=message,
                    instance_path=f"/{field}",
                    params={field: path_id},
                )
            ],
        )


# Pipelines


async def own_pipeline(
    *, session: AsyncSession, account_id: str, pipeline_id: str, for_update: bool = False
) -> Pipeline:
    pipeline = await repository.pipeline(
        session=session, account_id=account_id, pipeline_id=pipeline_id, for_update=for_update
    )
    if pipeline is None:
        raise NotFound(f"No pipeline {pipeline_id}")
    return pipeline


async def list_pipelines(*, db: Database, account_id: str) -> list[dict[str, Any]]:
    pipelines = await repository.pipelines_of(db=db, account_id=account_id)
    return [pipeline_data(pipeline) for pipeline in pipelines]


async def read_pipeline(
    *, db: Database, sealer: Sealer, account_id: str, pipeline_id: str
) -> dict[str, Any]:
    """The pipeline's document with its nodes as plain data, from raw reads (the
    pipeline, as ``own_pipeline`` finds it, then its nodes)."""
    pipeline = await repository.pipeline_record(db=db, account_id=account_id, item_id=pipeline_id)
    if pipeline is None:
        raise NotFound(f"No pipeline {pipeline_id}")
    nodes = await repository.node_records(db=db, pipeline_id=pipeline.id)
    return detail_data(
        pipeline,
        [
            node_data(node, open_config_with(sealer, node.user_config_sealed, node_id=node.id))
            for node in nodes
        ],
    )


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
        origin=body.origin,
        deploy_type=body.deploy_type,
        deployment_groups=body.deployment_groups,
        generation_id=0,
        revision=1,
        created_at=now,
        updated_at=now,
    )
    session.add(pipeline)
    await session.flush()
    return _detail(session, pipeline, [])


async def update_pipeline(
    *, session: AsyncSession, account_id: str, pipeline_id: str, body: schemas.PipelineUpdate
) -> schemas.PipelineDetail:
    """PATCH: only the fields given change."""
    pipeline = await own_pipeline(
        session=session, account_id=account_id, pipeline_id=pipeline_id, for_update=True
    )
    check_generation(what="pipeline", current=pipeline.generation_id, given=body.generation_id)
    given = body.model_fields_set
    if "title" in given and body.title is not None:
        pipeline.title = body.title
    for name in ("description", "origin", "deploy_type", "deployment_groups"):
        if name in given:
            setattr(pipeline, name, getattr(body, name))
    return await _saved_pipeline(session, pipeline)


async def replace_pipeline(
    *, session: AsyncSession, account_id: str, pipeline_id: str, body: schemas.PipelineReplace
) -> schemas.PipelineDetail:
    """PUT: the pipeline's own fields as given (absent optional ones cleared); its nodes
    are not part of the body and stay."""
    same_id(body.id, pipeline_id)
    pipeline = await own_pipeline(
        session=session, account_id=account_id, pipeline_id=pipeline_id, for_update=True
    )
    check_generation(what="pipeline", current=pipeline.generation_id, given=body.generation_id)
    pipeline.title = body.title
    pipeline.description = body.description
    pipeline.origin = body.origin
    pipeline.deploy_type = body.deploy_type
    pipeline.deployment_groups = body.deployment_groups
    return await _saved_pipeline(session, pipeline)


async def _saved_pipeline(session: AsyncSession, pipeline: Pipeline) -> schemas.PipelineDetail:
    pipeline.generation_id = (pipeline.generation_id or 0) + 1
    pipeline.updated_at = utcnow()
    await session.flush()
    return _detail(
        session, pipeline, await repository.nodes_of(session=session, pipeline_id=pipeline.id)
    )


async def delete_pipeline(
    *, session: AsyncSession, account_id: str, pipeline_id: str
) -> schemas.PipelineDetail:
    """Deletes the pipeline with its nodes; answers what was deleted."""
    pipeline = await own_pipeline(
        session=session, account_id=account_id, pipeline_id=pipeline_id, for_update=True
    )
    nodes = await repository.nodes_of(session=session, pipeline_id=pipeline.id)
    gone = _detail(session, pipeline, nodes)
    await repository.delete_pipeline(session=session, pipeline_id=pipeline.id)
    for row in (*nodes, pipeline):
        session.expunge(row)
    return gone


# Publishing


async def publish(
    *, session: AsyncSession, account_id: str, pipeline_id: str, allow_unconnected_edges: bool
) -> schemas.PipelineDetail:
    """The draft becomes the running revision: its graph and every node's configuration
    are checked again, then its nodes are copied over the published ones (same ids, so
    running processors whose configuration did not change keep their state)."""
    pipeline = await own_pipeline(
        session=session, account_id=account_id, pipeline_id=pipeline_id, for_update=True
    )
    nodes = await repository.nodes_of(session=session, pipeline_id=pipeline.id)
    graph = [graph_node(session, node) for node in nodes]
    validate_graph(graph)
    for node in nodes:
        try:
            validate_user_config(
                kind=node.kind, type_=node.type, user_config=config_of(session, node)
            )
        except ValidationFailed as error:
            # Each item names its node, so a client can show it on that node.
            raise ValidationFailed(
                f"node {node.id} ({node.kind} {node.type}): {error.message}",
                context="body",
                errors=[
                    replace(item, params={**item.params, "node_id": node.id})
                    for item in error.errors
                ],
            ) from None
    if not allow_unconnected_edges:
        loose = unconnected(graph)
        if loose:
            message = (
                f"node(s) {', '.join(loose)} are not connected (a source or processor whose "
                "output nothing takes, or a processor or destination without inputs); "
                "connect them or publish with allow_unconnected_edges=true"
            )
            raise ValidationFailed(
                message,
                context="querystring",
                errors=[ErrorItem(keyword="unconnected", message=message, params={"nodes": loose})],
            )
    await repository.replace_published_nodes(
        session=session,
        pipeline_id=pipeline.id,
        nodes=[
            PublishedPipelineNode(
                id=node.id,
                pipeline_id=pipeline.id,
                account_id=pipeline.account_id,
                kind=node.kind,
                type=node.type,
                title=node.title,
                inputs=list(node.inputs or []),
                # Copied sealed: publishing never needs the configuration in clear.
                user_config_sealed=node.user_config_sealed,
                gateway_route_id=node.gateway_route_id,
                created_at=node.created_at,
            )
            for node in nodes
        ],
    )
    pipeline.published_revision = pipeline.revision
    pipeline.published_at = utcnow()
    await session.flush()
    return _detail(session, pipeline, nodes)

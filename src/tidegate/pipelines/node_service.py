"""Node rules: the sources, processors and destinations of a pipeline's draft. No HTTP.

POST creates, PUT replaces the whole node, PATCH changes the fields given; both updates
check ``generation_id`` (optimistic concurrency) and increment it. Every save is checked
against the whole graph and bumps the draft's revision; nothing runs until published.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.auth.secrets import Sealer
from tidegate.components.catalogue import REGISTRY
from tidegate.components.validation import node_outputs, validate_user_config, vet_config
from tidegate.db.engine import Database
from tidegate.enterprise.service import has_feature
from tidegate.errors import Conflict, ErrorItem, Forbidden, NotFound, ValidationFailed
from tidegate.kit.destination_guard import DestinationPolicy
from tidegate.models import GatewayRoute, Pipeline, PipelineAlert, PipelineNode
from tidegate.models.base import new_uuid, utcnow
from tidegate.pipelines import repository, schemas
from tidegate.pipelines.graph import GraphNode, refuse_if_depended_on, validate_graph
from tidegate.pipelines.sealed_config import open_config_with, seal_config
from tidegate.pipelines.service import (
    check_generation,
    config_of,
    graph_node,
    node_data,
    node_schema,
    own_pipeline,
    routed_source,
    same_id,
    touch,
)

MAX_NODES_PER_PIPELINE: Final = 200
_PUBLIC_ONLY: Final = DestinationPolicy()


@dataclass(frozen=True, slots=True)
class _Change:
    """A node as it will be saved."""

    type: str
    title: str | None
    description: str | None
    inputs: list[str]
    user_config: dict[str, Any]
    gateway_route_id: str | None  # asked for (None: keep, or make one for a new source)


def _change_from(body: schemas.NodeCreate) -> _Change:
    """A create or replace body as the node to save."""
    return _Change(
        type=body.type,
        title=body.title,
        description=body.description,
        inputs=list(body.inputs),
        user_config=body.user_config,
        gateway_route_id=getattr(body, "gateway_route_id", None),
    )


async def _require_feature(
    *, session: AsyncSession, account_id: str, kind: str, type_: str
) -> None:
    """A type whose component needs a feature flag the account lacks: 403 on ``/type``."""
    component = REGISTRY.find(kind, type_)
    feature = None if component is None else component.needs.feature
    if component is None or feature is None:
        return
    if not await has_feature(session=session, account_id=account_id, name=feature):
        message = (
            f"The {component.type} {kind} is in beta and is not enabled for this account: "
            f"enable the '{feature}' feature first"
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


async def _route_of_its_own(
    *, session: AsyncSession, pipeline: Pipeline, type_: str, title: str | None
) -> str:
    """A gateway route made for a source created without one."""
    now = utcnow()
    route = GatewayRoute(
        id=new_uuid(),
        account_id=pipeline.account_id,
        title=(title or f"{type_} source of {pipeline.title}")[:250],
        type=type_,
        created_at=now,
        updated_at=now,
    )
    session.add(route)
    await session.flush()
    return route.id


_Node = TypeVar("_Node")


def _find(nodes: Sequence[_Node], kind: schemas.NodeKind, node_id: str) -> _Node:
    """The node ``node_id`` of ``kind`` (an ORM object or a raw record), or a 404."""
    for node in nodes:
        if getattr(node, "id", None) == node_id and getattr(node, "kind", None) == kind:
            return node
    raise NotFound(f"No {kind} {node_id} in this pipeline")


async def _node_records(
    *, db: Database, account_id: str, pipeline_id: str, kind: schemas.NodeKind
) -> list[Any]:
    """The account's pipeline's draft nodes of ``kind`` as raw records (one read);
    another account's pipeline, or none, is the same 404 as ``own_pipeline``'s."""
    nodes = await repository.kind_node_records(
        db=db, account_id=account_id, pipeline_id=pipeline_id, kind=kind
    )
    if nodes is None:
        raise NotFound(f"No pipeline {pipeline_id}")
    return nodes


async def read_nodes(
    *, db: Database, sealer: Sealer, account_id: str, pipeline_id: str, kind: schemas.NodeKind
) -> list[dict[str, Any]]:
    """The pipeline's nodes of ``kind`` as plain data, from raw reads."""
    nodes = await _node_records(db=db, account_id=account_id, pipeline_id=pipeline_id, kind=kind)
    return [
        node_data(node, open_config_with(sealer, node.user_config_sealed, node_id=node.id))
        for node in nodes
    ]


async def read_node(
    *,
    db: Database,
    sealer: Sealer,
    account_id: str,
    pipeline_id: str,
    kind: schemas.NodeKind,
    node_id: str,
) -> dict[str, Any]:
    """The pipeline's node ``node_id`` of ``kind`` as plain data, from raw reads."""
    nodes = await _node_records(db=db, account_id=account_id, pipeline_id=pipeline_id, kind=kind)
    node = _find(nodes, kind, node_id)
    return node_data(node, open_config_with(sealer, node.user_config_sealed, node_id=node.id))


async def _checked(
    *,
    session: AsyncSession,
    account_id: str,
    kind: schemas.NodeKind,
    change: _Change,
    old_type: str | None,
    destinations: DestinationPolicy,
) -> tuple[str | None, dict[str, Any]]:
    """The rules every save keeps, but the graph's; answers the route id to bind and the
    ``user_config`` to store (as sent, unless the component adds to it)."""
    if old_type is None or REGISTRY.find(kind, change.type) is not REGISTRY.find(kind, old_type):
        await _require_feature(session=session, account_id=account_id, kind=kind, type_=change.type)
    config = validate_user_config(kind=kind, type_=change.type, user_config=change.user_config)
    await vet_config(config, kind=kind, type_=change.type, policy=destinations)
    stored = REGISTRY.get(kind, change.type).stored
    user_config = change.user_config if stored is None else stored(config, change.user_config)
    route_id = None
    if kind == "source" and change.gateway_route_id is not None:
        route_id = await _own_route_id(
            session=session, account_id=account_id, gateway_route_id=change.gateway_route_id
        )
    return route_id, user_config


async def create_node(
    *,
    session: AsyncSession,
    account_id: str,
    pipeline_id: str,
    kind: schemas.NodeKind,
    body: schemas.NodeCreate,
    destinations: DestinationPolicy = _PUBLIC_ONLY,
) -> schemas.Node:
    pipeline = await own_pipeline(
        session=session, account_id=account_id, pipeline_id=pipeline_id, for_update=True
    )
    change = _change_from(body)
    route_id, user_config = await _checked(
        session=session,
        account_id=account_id,
        kind=kind,
        change=change,
        old_type=None,
        destinations=destinations,
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
        type=change.type,
        title=change.title,
        description=change.description,
        generation_id=0,
        inputs=change.inputs,
        user_config_sealed=seal_config(session, user_config),
        gateway_route_id=route_id,
        created_at=now,
        updated_at=now,
    )
    validate_graph(
        [*(graph_node(session, other) for other in nodes), graph_node(session, node)],
        changed=node.id,
    )
    if kind == "source" and route_id is None and routed_source(change.type):
        node.gateway_route_id = await _route_of_its_own(
            session=session, pipeline=pipeline, type_=change.type, title=change.title
        )
    session.add(node)
    touch(pipeline)
    await session.flush()
    return node_schema(session, node)


async def replace_node(
    *,
    session: AsyncSession,
    account_id: str,
    pipeline_id: str,
    kind: schemas.NodeKind,
    node_id: str,
    body: schemas.NodeCreate,
    destinations: DestinationPolicy = _PUBLIC_ONLY,
) -> schemas.Node:
    """PUT: the whole node; a source keeps its route unless another is given."""
    same_id(body.id, node_id)
    change = _change_from(body)
    return await _update(
        session=session,
        account_id=account_id,
        pipeline_id=pipeline_id,
        kind=kind,
        node_id=node_id,
        generation_id=body.generation_id,
        change_of=lambda _node: change,
        destinations=destinations,
    )


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
    """PATCH: only the fields given change."""
    given = body.model_fields_set

    def change_of(node: PipelineNode) -> _Change:
        def pick(name: str, current: Any) -> Any:
            value = getattr(body, name, None)
            return value if name in given and value is not None else current

        return _Change(
            type=pick("type", node.type),
            title=body.title if "title" in given else node.title,
            description=body.description if "description" in given else node.description,
            inputs=list(pick("inputs", node.inputs or [])),
            user_config=dict(
                body.user_config
                if "user_config" in given and body.user_config is not None
                else config_of(session, node)
            ),
            gateway_route_id=pick("gateway_route_id", None),
        )

    return await _update(
        session=session,
        account_id=account_id,
        pipeline_id=pipeline_id,
        kind=kind,
        node_id=node_id,
        generation_id=body.generation_id,
        change_of=change_of,
        destinations=destinations,
    )


async def _update(
    *,
    session: AsyncSession,
    account_id: str,
    pipeline_id: str,
    kind: schemas.NodeKind,
    node_id: str,
    generation_id: int | None,
    change_of: Callable[[PipelineNode], _Change],
    destinations: DestinationPolicy,
) -> schemas.Node:
    pipeline = await own_pipeline(
        session=session, account_id=account_id, pipeline_id=pipeline_id, for_update=True
    )
    nodes = await repository.nodes_of(session=session, pipeline_id=pipeline.id)
    node = _find(nodes, kind, node_id)
    check_generation(what=kind, current=node.generation_id or 0, given=generation_id)
    change = change_of(node)
    route_id, user_config = await _checked(
        session=session,
        account_id=account_id,
        kind=kind,
        change=change,
        old_type=node.type,
        destinations=destinations,
    )
    proposed = GraphNode(
        id=node.id,
        kind=kind,
        type=change.type,
        inputs=tuple(change.inputs),
        outputs=node_outputs(kind=kind, type_=change.type, user_config=change.user_config),
    )
    validate_graph(
        [proposed if other.id == node.id else graph_node(session, other) for other in nodes],
        changed=node.id,
    )
    node.type = change.type
    node.title = change.title
    node.description = change.description
    node.user_config_sealed = seal_config(session, user_config)
    node.inputs = change.inputs
    if route_id is not None:
        node.gateway_route_id = route_id
    node.generation_id = (node.generation_id or 0) + 1
    node.updated_at = utcnow()
    touch(pipeline)
    await session.flush()
    return node_schema(session, node)


async def delete_node(
    *,
    session: AsyncSession,
    account_id: str,
    pipeline_id: str,
    kind: schemas.NodeKind,
    node_id: str,
) -> schemas.Node:
    """Refuses (409, naming them) while other nodes take this one as an input; the
    node's alerts are deleted with it."""
    pipeline = await own_pipeline(
        session=session, account_id=account_id, pipeline_id=pipeline_id, for_update=True
    )
    nodes = await repository.nodes_of(session=session, pipeline_id=pipeline.id)
    node = _find(nodes, kind, node_id)
    refuse_if_depended_on((graph_node(session, other) for other in nodes), node.id)
    gone = node_schema(session, node)
    await session.delete(node)
    # Its alerts go with it (they would watch a component that no longer exists).
    await session.execute(
        delete(PipelineAlert).where(
            PipelineAlert.pipeline_id == pipeline.id, PipelineAlert.component_id == node.id
        )
    )
    touch(pipeline)
    await session.flush()
    return gone

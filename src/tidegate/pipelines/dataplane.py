"""What the data plane reads of the pipeline configuration: the **published** revision
of the pipelines a gateway route feeds, as graphs ready to compile, and cheap revision
checks. ``draft_graph`` is the draft, for simulation.

Credentials of a route live in ``gateway_service``: ``access_key_for_route`` and
``signing_secrets``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.models import PublishedPipelineNode
from tidegate.pipelines import repository, schemas
from tidegate.pipelines.graph import GraphNode, topological_order
from tidegate.pipelines.service import config_of, node_outputs, node_schema

__all__ = [
    "PipelineGraph",
    "draft_graph",
    "pipeline_graph",
    "pipeline_revisions_for_route",
    "pipeline_revisions_with_source",
    "pipelines_for_route",
]


@dataclass(frozen=True, slots=True)
class PipelineGraph:
    """One pipeline revision: nodes in run order (every node after its inputs).

    ``user_config`` is the client's JSON as validated on save; build the running
    processors from it with the component registry (``components.catalogue.REGISTRY``).
    """

    pipeline_id: str
    account_id: str
    revision: int
    nodes: tuple[schemas.Node, ...]
    graph: tuple[GraphNode, ...]

    def sources_for(self, gateway_route_id: str) -> list[schemas.Node]:
        return [
            node
            for node in self.nodes
            if node.kind == "source" and node.gateway_route_id == gateway_route_id
        ]


def _published_schema(session: AsyncSession, row: PublishedPipelineNode) -> schemas.Node:
    user_config = config_of(session, row)
    return schemas.Node(
        id=row.id,
        pipeline_id=row.pipeline_id,
        kind=row.kind,
        type=row.type,
        title=row.title,
        description=None,
        generation_id=0,
        inputs=list(row.inputs or []),
        user_config=user_config,
        gateway_route_id=row.gateway_route_id,
        outputs=node_outputs(row.kind, row.type, row.id, user_config),
        created_at=row.created_at,
        updated_at=row.created_at,
    )


def _graph(
    *, pipeline_id: str, account_id: str, revision: int, nodes: Sequence[schemas.Node]
) -> PipelineGraph:
    by_id = {node.id: node for node in nodes}
    ordered = topological_order(
        [
            GraphNode(id=node.id, kind=node.kind, type=node.type, inputs=tuple(node.inputs))
            for node in nodes
        ]
    )
    return PipelineGraph(
        pipeline_id=pipeline_id,
        account_id=account_id,
        revision=revision,
        nodes=tuple(by_id[node.id] for node in ordered),
        graph=tuple(ordered),
    )


async def pipeline_graph(*, session: AsyncSession, pipeline_id: str) -> PipelineGraph | None:
    """The published revision (None when the pipeline is gone or was never published)."""
    pipeline = await repository.pipeline_by_id(session=session, pipeline_id=pipeline_id)
    if pipeline is None or pipeline.published_revision is None:
        return None
    rows = await repository.published_nodes_of(session=session, pipeline_id=pipeline.id)
    return _graph(
        pipeline_id=pipeline.id,
        account_id=pipeline.account_id,
        revision=pipeline.published_revision,
        nodes=[_published_schema(session, row) for row in rows],
    )


async def draft_graph(*, session: AsyncSession, pipeline_id: str) -> PipelineGraph | None:
    """The draft as it stands (simulation runs it before it is published)."""
    pipeline = await repository.pipeline_by_id(session=session, pipeline_id=pipeline_id)
    if pipeline is None:
        return None
    rows = await repository.nodes_of(session=session, pipeline_id=pipeline.id)
    return _graph(
        pipeline_id=pipeline.id,
        account_id=pipeline.account_id,
        revision=pipeline.revision,
        nodes=[node_schema(session, row) for row in rows],
    )


async def pipelines_for_route(
    *, session: AsyncSession, gateway_route_id: str
) -> list[PipelineGraph]:
    """Every pipeline whose published revision has a source bound to the route."""
    ids = await repository.published_pipelines_for_route(
        session=session, gateway_route_id=gateway_route_id
    )
    graphs = [await pipeline_graph(session=session, pipeline_id=pid) for pid in ids]
    return [graph for graph in graphs if graph is not None]


async def pipeline_revisions_for_route(
    *, session: AsyncSession, gateway_route_id: str
) -> dict[str, int]:
    """``{pipeline_id: published revision}`` of the route's pipelines: one cheap query to
    tell whether compiled graphs are stale."""
    return await repository.pipeline_revisions_for_route(
        session=session, gateway_route_id=gateway_route_id
    )


async def pipeline_revisions_with_source(
    *, session: AsyncSession, account_id: str, source_type: str | tuple[str, ...]
) -> dict[str, int]:
    """``{pipeline_id: revision}`` of the account's pipelines with a source of that type."""
    return await repository.pipeline_revisions_with_source(
        session=session, account_id=account_id, source_type=source_type
    )

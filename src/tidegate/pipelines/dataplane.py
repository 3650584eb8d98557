"""What the data plane reads of the pipeline configuration (issue 4): the pipelines a
gateway route feeds, as graphs ready to compile, and cheap revision checks.

Credentials of a route live in ``gateway_service``: ``access_key_for_route`` and
``signing_secrets``.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.pipelines import repository, schemas
from tidegate.pipelines.graph import GraphNode, topological_order
from tidegate.pipelines.service import graph_node, node_schema

__all__ = [
    "PipelineGraph",
    "pipeline_graph",
    "pipeline_revisions_for_route",
    "pipeline_revisions_with_source",
    "pipelines_for_route",
]


@dataclass(frozen=True, slots=True)
class PipelineGraph:
    """One pipeline as stored: nodes in run order (every node after its inputs).

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


async def pipeline_graph(*, session: AsyncSession, pipeline_id: str) -> PipelineGraph | None:
    pipeline = await repository.pipeline_by_id(session=session, pipeline_id=pipeline_id)
    if pipeline is None:
        return None
    rows = await repository.nodes_of(session=session, pipeline_id=pipeline.id)
    by_id = {row.id: row for row in rows}
    ordered = topological_order([graph_node(row) for row in rows])
    return PipelineGraph(
        pipeline_id=pipeline.id,
        account_id=pipeline.account_id,
        revision=pipeline.revision,
        nodes=tuple(node_schema(by_id[node.id]) for node in ordered),
        graph=tuple(ordered),
    )


async def pipelines_for_route(
    *, session: AsyncSession, gateway_route_id: str
) -> list[PipelineGraph]:
    """Every pipeline with an HTTP source bound to the route, oldest source first."""
    seen: list[str] = []
    for source in await repository.sources_bound_to(
        session=session, gateway_route_id=gateway_route_id
    ):
        if source.pipeline_id not in seen:
            seen.append(source.pipeline_id)
    graphs = [await pipeline_graph(session=session, pipeline_id=pid) for pid in seen]
    return [graph for graph in graphs if graph is not None]


async def pipeline_revisions_for_route(
    *, session: AsyncSession, gateway_route_id: str
) -> dict[str, int]:
    """``{pipeline_id: revision}`` of the route's pipelines: one cheap query to tell
    whether compiled graphs are stale."""
    return await repository.pipeline_revisions_for_route(
        session=session, gateway_route_id=gateway_route_id
    )


async def pipeline_revisions_with_source(
    *, session: AsyncSession, account_id: str, source_type: str
) -> dict[str, int]:
    """``{pipeline_id: revision}`` of the account's pipelines with a source of that type."""
    return await repository.pipeline_revisions_with_source(
        session=session, account_id=account_id, source_type=source_type
    )

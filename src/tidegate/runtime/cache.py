"""Per-worker caches: compiled pipelines keyed by ``(pipeline_id, revision)``, and the
running node runtimes (``NodeRuntimes``), kept across recompiles while their
configuration is unchanged so that a pipeline edit elsewhere does not reset a
throttle's windows."""

from __future__ import annotations

import logging
from collections import OrderedDict

from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.components.base import BuildContext, NodeRef
from tidegate.config import DEFAULT_REDIS_PREFIX
from tidegate.pipelines import dataplane
from tidegate.runtime.compiler import CompiledPipeline, NodeRuntimes, compile_pipeline

log = logging.getLogger("tidegate.runtime")

__all__ = ["PipelineCache", "redis_key_prefix", "throttle_key_prefix"]


def redis_key_prefix(
    pipeline_id: str, node_id: str, fingerprint: str, *, redis_prefix: str = DEFAULT_REDIS_PREFIX
) -> str:
    """After the deployment's Redis prefix (which has no braces: config.py), the hash
    tag keeps a processor's keys in one Cluster slot; the fingerprint makes a changed
    configuration start with fresh windows in every worker at once."""
    return f"{redis_prefix}throttle:{{{pipeline_id}:{node_id}}}:{fingerprint[:16]}"


def throttle_key_prefix(node: NodeRef, *, redis_prefix: str = DEFAULT_REDIS_PREFIX) -> str:
    return redis_key_prefix(
        node.pipeline_id, node.node_id, node.fingerprint, redis_prefix=redis_prefix
    )


class PipelineCache:
    def __init__(self, context: BuildContext, *, max_pipelines: int) -> None:
        self.context = context
        self.runtimes = NodeRuntimes()
        self._max = max_pipelines
        self._compiled: OrderedDict[str, CompiledPipeline] = OrderedDict()

    def cached(self, pipeline_id: str) -> CompiledPipeline | None:
        return self._compiled.get(pipeline_id)

    async def for_route(
        self, *, session: AsyncSession, gateway_route_id: str
    ) -> list[CompiledPipeline]:
        """The route's pipelines, compiled; one cheap revision query when nothing changed.

        Raises ``PipelineBroken`` when a stored configuration no longer validates."""
        revisions = await dataplane.pipeline_revisions_for_route(
            session=session, gateway_route_id=gateway_route_id
        )
        return await self._load(session, revisions)

    async def with_source(
        self, *, session: AsyncSession, account_id: str, source_type: str | tuple[str, ...]
    ) -> list[CompiledPipeline]:
        """The account's pipelines that have a source of ``source_type`` (sources fed by
        tidegate itself, not by a route), compiled."""
        revisions = await dataplane.pipeline_revisions_with_source(
            session=session, account_id=account_id, source_type=source_type
        )
        return await self._load(session, revisions)

    async def _load(
        self, session: AsyncSession, revisions: dict[str, int]
    ) -> list[CompiledPipeline]:
        pipelines: list[CompiledPipeline] = []
        for pipeline_id in sorted(revisions):
            compiled = self._compiled.get(pipeline_id)
            if compiled is None or compiled.revision != revisions[pipeline_id]:
                graph = await dataplane.pipeline_graph(session=session, pipeline_id=pipeline_id)
                if graph is None:  # deleted since the revision query
                    self._forget(pipeline_id)
                    continue
                compiled = self._compile_sync(graph)
            else:
                self._compiled.move_to_end(pipeline_id)
            pipelines.append(compiled)
        return pipelines

    def _compile_sync(self, graph: dataplane.PipelineGraph) -> CompiledPipeline:
        # No await between compiling and storing: two requests that both found the
        # pipeline stale reuse each other's runtimes (a throttle's windows).
        compiled = compile_pipeline(graph, context=self.context, runtimes=self.runtimes)
        self.runtimes.keep_only(graph.pipeline_id, {node.id for node in compiled.nodes})
        previous = self._compiled.get(graph.pipeline_id)
        if previous is None or previous.revision <= compiled.revision:
            self._compiled[graph.pipeline_id] = compiled
            self._compiled.move_to_end(graph.pipeline_id)
            log.info("pipeline %s compiled at revision %s", graph.pipeline_id, compiled.revision)
        while len(self._compiled) > self._max:
            evicted, _ = self._compiled.popitem(last=False)
            self.runtimes.keep_only(evicted, set())
        return compiled

    def _forget(self, pipeline_id: str) -> None:
        self._compiled.pop(pipeline_id, None)
        self.runtimes.keep_only(pipeline_id, set())

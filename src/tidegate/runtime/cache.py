"""Per-worker caches: compiled pipelines keyed by ``(pipeline_id, revision)``, and the
running Throttle processors, kept across recompiles while their configuration is
unchanged so that a pipeline edit elsewhere does not reset their windows."""

from __future__ import annotations

import logging
from collections import OrderedDict

from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.pipelines import dataplane
from tidegate.processing.throttle import (
    RedisStore,
    ThrottleBudget,
    ThrottleConfig,
    ThrottleProcessor,
)
from tidegate.runtime.compiler import CompiledPipeline, compile_pipeline

log = logging.getLogger("tidegate.runtime")

__all__ = ["PipelineCache", "ThrottleRegistry", "redis_key_prefix"]


def redis_key_prefix(pipeline_id: str, node_id: str, fingerprint: str) -> str:
    """The hash tag keeps a processor's keys in one Cluster slot; the fingerprint makes
    a changed configuration start with fresh windows in every worker at once."""
    return f"tidegate:throttle:{{{pipeline_id}:{node_id}}}:{fingerprint[:16]}"


class ThrottleRegistry:
    """The running Throttle processors of one worker, by ``(pipeline_id, node_id)``.

    In-memory processors share ``budget``, the worker's cap on throttle keys and bytes
    across every tenant (on Redis the state lives in Redis, bounded per processor by
    ``max_keys`` and by the keys' expiry)."""

    def __init__(self, redis: Redis | None, *, budget: ThrottleBudget | None = None) -> None:
        self._redis = redis
        self.budget = budget
        self._running: dict[tuple[str, str], tuple[str, ThrottleProcessor]] = {}

    def get(
        self, pipeline_id: str, node_id: str, fingerprint: str, config: ThrottleConfig
    ) -> ThrottleProcessor:
        found = self._running.get((pipeline_id, node_id))
        if found is not None and found[0] == fingerprint:
            return found[1]
        store = None
        if self._redis is not None:
            store = RedisStore(
                self._redis, key_prefix=redis_key_prefix(pipeline_id, node_id, fingerprint)
            )
        processor = ThrottleProcessor(config, store=store, budget=self.budget)
        self._running[(pipeline_id, node_id)] = (fingerprint, processor)
        return processor

    def keep_only(self, pipeline_id: str, node_ids: set[str]) -> None:
        """Forget the pipeline's processors that are no longer among ``node_ids``."""
        for key in [key for key in self._running if key[0] == pipeline_id]:
            if key[1] not in node_ids:
                del self._running[key]

    def __len__(self) -> int:
        return len(self._running)


class PipelineCache:
    def __init__(self, registry: ThrottleRegistry, *, max_pipelines: int) -> None:
        self.registry = registry
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
        # pipeline stale reuse each other's throttle processors.
        compiled = compile_pipeline(graph, throttle_for=self.registry.get)
        self.registry.keep_only(
            graph.pipeline_id, {node.id for node in compiled.nodes if node.type == "throttle"}
        )
        previous = self._compiled.get(graph.pipeline_id)
        if previous is None or previous.revision <= compiled.revision:
            self._compiled[graph.pipeline_id] = compiled
            self._compiled.move_to_end(graph.pipeline_id)
            log.info("pipeline %s compiled at revision %s", graph.pipeline_id, compiled.revision)
        while len(self._compiled) > self._max:
            evicted, _ = self._compiled.popitem(last=False)
            self.registry.keep_only(evicted, set())
        return compiled

    def _forget(self, pipeline_id: str) -> None:
        self._compiled.pop(pipeline_id, None)
        self.registry.keep_only(pipeline_id, set())

"""The ``demo-logs`` source at work: every second, each pipeline with a demo-logs source
gets the events due since its last tick (one per ``interval_secs``), run through the
pipeline and delivered like a request's.

Bounds: at most ``MAX_PER_TICK`` events per source and tick (a long pause does not
come back as a burst), at most ``MAX_SOURCES`` sources per worker, ``count`` events per
source in all (counted per worker since it started). **Several workers:** with Redis,
one worker at a time holds the lease ``<TIDEGATE_REDIS_PREFIX>demo-logs:leader`` (renewed every
tick, ``LEASE_MS``) and only it generates; without Redis every worker generates (run one
worker, or use Redis, for the configured rate).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from sqlalchemy import select

from tidegate.clock import now_ms
from tidegate.components.base import Event
from tidegate.components.sources.demo_logs import DemoLogsConfig, demo_event
from tidegate.config import DEFAULT_REDIS_PREFIX
from tidegate.delivery import DeliveryFailed
from tidegate.models import PipelineNode
from tidegate.runtime.compiler import PipelineBroken, run_graph
from tidegate.runtime.delivery import Delivery
from tidegate.runtime.features import enabled_features

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from tidegate.logs.intake import LineIntake
    from tidegate.runtime.runtime import Runtime

log = logging.getLogger("tidegate.runtime")

__all__ = ["LEASE_MS", "MAX_PER_TICK", "MAX_SOURCES", "DemoLogsScheduler"]

TYPE: Final = "demo-logs"
MAX_PER_TICK: Final = 100
MAX_SOURCES: Final = 1_000
LEASE_MS: Final = 5_000
_LEADER_PART: Final = "demo-logs:leader"  # after the deployment's Redis prefix


@dataclass(slots=True)
class _Source:
    next_ms: int
    made: int = 0


class DemoLogsScheduler:
    def __init__(
        self,
        *,
        redis: Redis | None = None,
        redis_prefix: str = DEFAULT_REDIS_PREFIX,
        tick_s: float = 1.0,
    ) -> None:
        self._redis = redis
        self.leader_key = redis_prefix + _LEADER_PART
        self._tick_s = tick_s
        self._sources: dict[tuple[str, str], _Source] = {}
        self._me = f"{os.getpid()}-{id(self)}"
        self._task: asyncio.Task[None] | None = None
        self.generated = 0

    def start(self, runtime: Runtime, intake: LineIntake) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(runtime, intake), name="tidegate-demo-logs")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self, runtime: Runtime, intake: LineIntake) -> None:
        while True:
            try:
                if await self._leading():
                    await self.tick(runtime, intake, now_ms=now_ms())
            except Exception:  # any: the loop must go on
                log.exception("demo-logs tick failed")
            await asyncio.sleep(self._tick_s)

    async def _leading(self) -> bool:
        if self._redis is None:
            return True
        try:
            won = await self._redis.set(self.leader_key, self._me, nx=True, px=LEASE_MS)
            if won:
                return True
            holder = await self._redis.get(self.leader_key)
            if holder in (self._me, self._me.encode()):
                await self._redis.pexpire(self.leader_key, LEASE_MS)
                return True
        except Exception as error:  # Redis down: nobody generates rather than everyone
            log.warning("demo-logs: no lease (%s)", error)
        return False

    async def tick(self, runtime: Runtime, intake: LineIntake, *, now_ms: int) -> int:
        """Generate and deliver what is due; returns the events made."""
        async with intake.db.read_sessions() as session:
            rows = await session.execute(
                select(PipelineNode.pipeline_id, PipelineNode.account_id)
                .where(PipelineNode.kind == "source", PipelineNode.type == TYPE)
                .distinct()
                .limit(MAX_SOURCES)
            )
            owners = sorted({(row[0], row[1]) for row in rows})
        made = 0
        seen: set[tuple[str, str]] = set()
        for pipeline_id, account_id in owners:
            try:
                made += await self._pipeline(runtime, intake, pipeline_id, account_id, now_ms, seen)
            except (DeliveryFailed, PipelineBroken) as error:
                log.warning("demo-logs: pipeline %s: %s", pipeline_id, error)
        for gone in set(self._sources) - seen:
            del self._sources[gone]
        self.generated += made
        return made

    async def _pipeline(
        self,
        runtime: Runtime,
        intake: LineIntake,
        pipeline_id: str,
        account_id: str,
        now_ms: int,
        seen: set[tuple[str, str]],
    ) -> int:
        async with intake.db.read_sessions() as session:
            pipelines = await runtime.pipelines.with_source(
                session=session, account_id=account_id, source_type=TYPE
            )
            pipeline = next((p for p in pipelines if p.pipeline_id == pipeline_id), None)
            if pipeline is None:
                return 0
            features = await enabled_features(
                session=session, account_id=account_id, needed=pipeline.features
            )
        by_node: dict[str, list[Event]] = {}
        for node in pipeline.nodes:
            if node.kind != "source" or node.type != TYPE:
                continue
            config = node.config
            assert isinstance(config, DemoLogsConfig)
            key = (pipeline_id, node.id)
            seen.add(key)
            state = self._sources.setdefault(key, _Source(next_ms=now_ms))
            interval = int(config.interval_secs * 1000)
            due = 0 if now_ms < state.next_ms else 1 + (now_ms - state.next_ms) // interval
            due = min(due, MAX_PER_TICK)
            if config.count is not None:
                due = min(due, config.count - state.made)
            if due <= 0:
                continue
            by_node[node.id] = [
                demo_event(config, state.made + index, now_ms) for index in range(due)
            ]
            state.made += due
            state.next_ms += due * interval
            if state.next_ms <= now_ms:  # capped: the backlog is dropped, not replayed
                state.next_ms = now_ms + interval
        if not by_node:
            return 0
        outputs = await run_graph(
            pipeline,
            [],
            gateway_route_id=None,
            features=features,
            offload=runtime.offload,
            source_events=by_node,
        )
        delivery = Delivery()
        delivery.add(pipeline, outputs)
        await runtime.deliver(delivery, intake=intake, received_ms=now_ms)
        return sum(len(events) for events in by_node.values())

"""Pull sources at work (``components/sources/pull.py``): about once a second, every
published node of a source type with a ``pull`` hook is asked for what is waiting; the
events run through its pipeline and are delivered like a request's, and only then is
the source told they are done (an SQS message is deleted), so a failed delivery leaves
them to be fetched again (at-least-once).

Bounds: at most ``MAX_SOURCES`` nodes per worker and tick, polled one after another
(each answer is bounded by its type). Every worker polls (a queue hands each message to
one receiver at a time), so no lease is needed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Final

from sqlalchemy import select

from tidegate.clock import now_ms
from tidegate.components.catalogue import REGISTRY
from tidegate.components.sources.pull import PullContext
from tidegate.models import PipelineNode
from tidegate.runtime.compiler import run_graph
from tidegate.runtime.delivery import Delivery
from tidegate.runtime.features import enabled_features

if TYPE_CHECKING:
    from tidegate.logs.intake import LineIntake
    from tidegate.runtime.runtime import Runtime

log = logging.getLogger("tidegate.runtime")

__all__ = ["MAX_SOURCES", "PullScheduler"]

MAX_SOURCES: Final = 1_000


class PullScheduler:
    def __init__(self, *, tick_s: float = 1.0) -> None:
        self._tick_s = tick_s
        self._task: asyncio.Task[None] | None = None
        self.pulled = 0
        self.failures = 0

    def start(self, runtime: Runtime, intake: LineIntake) -> None:
        if self._task is None and self._types():
            self._task = asyncio.create_task(self._run(runtime, intake), name="tidegate-pull")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    @staticmethod
    def _types() -> list[str]:
        return [c.type for c in REGISTRY.of_kind("source") if c.pull is not None]

    async def _run(self, runtime: Runtime, intake: LineIntake) -> None:
        while True:
            try:
                await self.tick(runtime, intake)
            except Exception:  # any: the loop must go on
                log.exception("pull sources: tick failed")
            await asyncio.sleep(self._tick_s)

    async def tick(self, runtime: Runtime, intake: LineIntake) -> int:
        """Poll every pull source once; returns the events delivered."""
        types = self._types()
        async with intake.db.read_sessions() as session:
            rows = await session.execute(
                select(PipelineNode.account_id, PipelineNode.type)
                .where(PipelineNode.kind == "source", PipelineNode.type.in_(types))
                .distinct()
                .limit(MAX_SOURCES)
            )
            owners = sorted({(row[0], row[1]) for row in rows})
        delivered = 0
        for account_id, source_type in owners:
            delivered += await self._account(runtime, intake, account_id, source_type)
        self.pulled += delivered
        return delivered

    async def _account(
        self, runtime: Runtime, intake: LineIntake, account_id: str, source_type: str
    ) -> int:
        component = REGISTRY.get("source", source_type)
        assert component.pull is not None
        async with intake.db.read_sessions() as session:
            pipelines = await runtime.pipelines.with_source(
                session=session, account_id=account_id, source_type=source_type
            )
            features = {
                p.pipeline_id: await enabled_features(
                    session=session, account_id=account_id, needed=p.features
                )
                for p in pipelines
            }
        context = PullContext(client=runtime.client, s3_endpoint=runtime.s3_endpoint)
        delivered = 0
        for pipeline in pipelines:
            for node in pipeline.nodes:
                if node.kind != "source" or node.type != source_type:
                    continue
                try:
                    pulled = await component.pull(node.config, context)
                    if not pulled.events:
                        continue
                    outputs = await run_graph(
                        pipeline,
                        [],
                        gateway_route_id=None,
                        features=features[pipeline.pipeline_id],
                        offload=runtime.offload,
                        source_events={node.id: pulled.events},
                    )
                    delivery = Delivery()
                    delivery.add(pipeline, outputs)
                    await runtime.deliver(delivery, intake=intake, received_ms=now_ms())
                    await pulled.done()
                    delivered += len(pulled.events)
                except Exception as error:  # one source's failure is its own
                    self.failures += 1
                    log.warning(
                        "pull source %s of pipeline %s: %s", node.id, pipeline.pipeline_id, error
                    )
        return delivered

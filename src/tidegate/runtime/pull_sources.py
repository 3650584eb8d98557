"""Pull sources at work (``components/sources/pull.py``): about once a second, every
published node of a source type with a ``pull`` hook is asked for what is waiting; the
events run through its pipeline and are delivered like a request's, and only then is
the source told they are done (an SQS message is deleted), so a failed delivery leaves
them to be fetched again (at-least-once).

Bounds: at most ``MAX_SOURCES`` nodes per worker and tick, polled one after another
(each answer is bounded by its type). Every worker polls (a queue hands each message to
one receiver at a time; a Kafka consumer group spreads partitions over its members), so
no lease is needed.

A node's built runtime is given to its pull (``PullContext.runtime``: a Kafka
consumer); a runtime with an ``aclose`` that a tick no longer pulls (its pipeline
unpublished or deleted, its configuration changed) is closed after that tick, and every
one when the scheduler closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final

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
        self._held: dict[int, Any] = {}
        """Runtimes with an ``aclose`` pulled by the last tick, by ``id``."""

    def start(self, runtime: Runtime, intake: LineIntake) -> None:
        if self._task is None and self._types():
            self._task = asyncio.create_task(self._run(runtime, intake), name="tidegate-pull")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        held, self._held = self._held, {}
        await _close_all(held.values())

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
        pulled: dict[int, Any] = {}
        for account_id, source_type in owners:
            delivered += await self._account(runtime, intake, account_id, source_type, pulled)
        self.pulled += delivered
        gone = [held for key, held in self._held.items() if key not in pulled]
        self._held = pulled
        await _close_all(gone)
        return delivered

    async def _account(
        self,
        runtime: Runtime,
        intake: LineIntake,
        account_id: str,
        source_type: str,
        pulled: dict[int, Any],
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
        delivered = 0
        for pipeline in pipelines:
            for node in pipeline.nodes:
                if node.kind != "source" or node.type != source_type:
                    continue
                if hasattr(node.runtime, "aclose"):
                    pulled[id(node.runtime)] = node.runtime
                context = PullContext(
                    client=runtime.client, s3_endpoint=runtime.s3_endpoint, runtime=node.runtime
                )
                try:
                    fetched = await component.pull(node.config, context)
                    if not fetched.events:
                        continue
                    outputs = await run_graph(
                        pipeline,
                        [],
                        gateway_route_id=None,
                        features=features[pipeline.pipeline_id],
                        offload=runtime.offload,
                        source_events={node.id: fetched.events},
                    )
                    delivery = Delivery()
                    delivery.add(pipeline, outputs)
                    await runtime.deliver(delivery, intake=intake, received_ms=now_ms())
                    await fetched.done()
                    delivered += len(fetched.events)
                except Exception as error:  # one source's failure is its own
                    self.failures += 1
                    log.warning(
                        "pull source %s of pipeline %s: %s", node.id, pipeline.pipeline_id, error
                    )
        return delivered


async def _close_all(runtimes: Iterable[Any]) -> None:
    for held in runtimes:
        try:
            await held.aclose()
        except Exception:  # any: closing one must not stop the others
            log.exception("pull sources: closing a runtime failed")

"""The ``log-analysis-ingestion`` source at work: lines committed by ``/logs/ingest``
run through the account's pipelines that have that source (see
``components/sources/log_analysis_ingestion.py`` for what flows and the bounds)."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING

from tidegate.components.sources.log_analysis_ingestion import (
    ACCOUNT_TTL_S,
    MAX_FEEDS,
    NAMES,
    line_events,
)
from tidegate.delivery import DeliveryFailed
from tidegate.pipelines import dataplane
from tidegate.runtime.compiler import PipelineBroken, run_graph
from tidegate.runtime.delivery import Delivery
from tidegate.runtime.features import enabled_features

if TYPE_CHECKING:
    from tidegate.db.engine import Database
    from tidegate.logs.intake import JudgedLines, LineIntake
    from tidegate.runtime.runtime import Runtime

log = logging.getLogger("tidegate.runtime")

__all__ = ["IngestionFeed"]

_MAX_ACCOUNTS = 10_000


class IngestionFeed:
    def __init__(self) -> None:
        # account id -> (checked at, has such a pipeline)
        self._accounts: dict[str, tuple[float, bool]] = {}
        self._in_flight = 0
        self.delivered = 0
        self.skipped = 0

    async def wanted(self, *, db: Database, runtime: Runtime, account_id: str) -> bool:
        """Whether the account has a pipeline with the source (cached a moment)."""
        now = time.monotonic()
        found = self._accounts.get(account_id)
        if found is not None and now - found[0] < ACCOUNT_TTL_S:
            return found[1]
        async with db.read_sessions() as session:
            revisions = await dataplane.pipeline_revisions_with_source(
                session=session, account_id=account_id, source_type=NAMES
            )
        if len(self._accounts) >= _MAX_ACCOUNTS:
            self._accounts.clear()
        self._accounts[account_id] = (now, bool(revisions))
        return bool(revisions)

    async def feed(
        self,
        *,
        runtime: Runtime,
        intake: LineIntake,
        judged: Sequence[JudgedLines],
        received_ms: int,
    ) -> None:
        """Run the committed lines through the pipelines; never raises."""
        if self._in_flight >= MAX_FEEDS:
            self.skipped += 1
            log.warning("log-analysis-ingestion: too many batches in flight, one skipped")
            return
        self._in_flight += 1
        try:
            await self._feed(runtime, intake, judged, received_ms)
        except (DeliveryFailed, PipelineBroken) as error:
            log.warning("log-analysis-ingestion: %s", error)
        except Exception:  # any: ingestion has answered; this must not escape
            log.exception("log-analysis-ingestion failed")
        finally:
            self._in_flight -= 1

    async def _feed(
        self,
        runtime: Runtime,
        intake: LineIntake,
        judged: Sequence[JudgedLines],
        received_ms: int,
    ) -> None:
        for item in judged:
            lines = [*item.stored, *item.indexonly]
            if not lines:
                continue
            async with intake.db.read_sessions() as session:
                pipelines = await runtime.pipelines.with_source(
                    session=session, account_id=item.account_id, source_type=NAMES
                )
                features = await enabled_features(
                    session=session,
                    account_id=item.account_id,
                    needed=frozenset().union(*(p.features for p in pipelines)),
                )
            if not pipelines:
                continue
            events = await runtime.offload(partial(line_events, lines), work=len(lines))
            delivery = Delivery()
            for pipeline in pipelines:
                sources = {
                    node.id: events
                    for node in pipeline.nodes
                    if node.kind == "source" and node.type in NAMES
                }
                outputs = await run_graph(
                    pipeline,
                    [],
                    gateway_route_id=None,
                    features=features,
                    offload=runtime.offload,
                    source_events=sources,
                )
                delivery.add(pipeline, outputs)
            await runtime.deliver(delivery, intake=intake, received_ms=received_ms)
            self.delivered += 1

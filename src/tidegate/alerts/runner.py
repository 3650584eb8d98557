"""The background task of each worker process: every ``alert_tick_s`` it evaluates
(when it holds the evaluator's lease) and delivers what is due. Started and stopped
by the app's lifespan; never on the ingest path."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from tidegate import metrics
from tidegate.alerts import idle
from tidegate.alerts.evaluator import Evaluator
from tidegate.alerts.index_rate.evaluator import evaluate_index_rates
from tidegate.alerts.matching import MatchingPool
from tidegate.alerts.outbox import Outbox
from tidegate.alerts.pipeline_alerts import evaluate_pipeline_alerts
from tidegate.auth.secrets import Sealer
from tidegate.clock import now_ms
from tidegate.config import Settings
from tidegate.db.engine import Database
from tidegate.shutdown import close_step, stop_task

if TYPE_CHECKING:
    from tidegate.logs.intake import LineIntake

log = logging.getLogger(__name__)


class AlertRunner:
    def __init__(
        self,
        db: Database,
        sealer: Sealer,
        settings: Settings,
        *,
        clock: Callable[[], int] = now_ms,
        intake: LineIntake | None = None,
    ) -> None:
        self.settings = settings
        self.owner = uuid.uuid4().hex
        self.clock = clock
        self.matching = MatchingPool(in_process=not settings.alert_match_process)
        self.evaluator = Evaluator(
            db, sealer, settings, owner=self.owner, clock=clock, matching=self.matching
        )
        self.outbox = Outbox(db, sealer, settings, clock=clock, intake=intake)
        self._db = db
        self._sealer = sealer
        self._task: asyncio.Task[None] | None = None
        self.rounds = 0

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="tidegate-alerts")

    async def close(self) -> None:
        if self._task is not None:
            await stop_task(
                self._task, "alert rounds", timeout_s=self.settings.shutdown_step_timeout_s
            )
            self._task = None
        await close_step(
            "alert outbox", self.outbox.close, timeout_s=self.settings.shutdown_step_timeout_s
        )
        bound = self.settings.shutdown_step_timeout_s
        await close_step(
            "alert matching process",
            partial(self.matching.aclose, timeout_s=bound / 2),
            timeout_s=bound,
        )

    async def round(self) -> None:
        """One evaluation (lines, index rates, pipeline alerts) and one delivery pass;
        one read when there is nothing to evaluate or deliver (alerts.idle)."""
        started = time.perf_counter()
        try:
            todo = await idle.work(self._db, now_ms=self.clock())
        except Exception:
            metrics.ALERT_EVALUATIONS.labels("failed").inc()
            raise
        if not todo.evaluate:
            metrics.ALERT_EVALUATIONS.labels("idle").inc()
            if todo.deliver:
                await self._deliver()
            self.rounds += 1
            return
        try:
            result = await self.evaluator.evaluate()
            if result.claimed:
                await evaluate_index_rates(
                    self._db,
                    self._sealer,
                    self.settings,
                    now_ms=self.clock(),
                )
                metrics.ALERT_FIRINGS.inc(
                    await evaluate_pipeline_alerts(
                        self._db, self._sealer, self.settings, now_ms=self.clock()
                    )
                )
        except Exception:
            metrics.ALERT_EVALUATIONS.labels("failed").inc()
            raise
        if result.claimed:
            metrics.ALERT_EVALUATIONS.labels("evaluated").inc()
            metrics.ALERT_EVALUATION_SECONDS.observe(time.perf_counter() - started)
            metrics.ALERT_LINES_EVALUATED.inc(result.lines)
            metrics.ALERT_FIRINGS.inc(result.firings)
        else:
            metrics.ALERT_EVALUATIONS.labels("standby").inc()
        await self._deliver()
        self.rounds += 1

    async def _deliver(self) -> None:
        delivered = await self.outbox.deliver_due()
        for outcome in ("delivered", "retried", "failed"):
            count = getattr(delivered, outcome)
            if count:
                metrics.ALERT_DELIVERIES.labels(outcome).inc(count)

    async def _run(self) -> None:
        while True:
            try:
                await self.round()
            except asyncio.CancelledError:
                raise
            except Exception:  # the database may be down for a while: try next tick
                log.warning("alert round failed", exc_info=True)
            await asyncio.sleep(self.settings.alert_tick_s)

"""Pipeline alerts judged on the component's events (docs/api-pipelines.md, "Alerts on
the events themselves").

An alert whose conditional names a field other than the usage counts
(``alerts.pipeline_alerts.judged_on_events``: ``.count``, ``.value``, ``.status``...)
is judged as the platform judges it: the events its inputs name (what reached the
component, as the usage counts count it, or what the route arms
``<component id>.<output>`` sent) folded by its ``operation`` (the
platform's aggregate-v2: ``SUM``, ``MIN``, ``MAX``, ``AVG``, ... of metric values, or
``CUSTOM``: its JavaScript ``fn(accum, event)``) in windows of its duration, per
``group_by`` values, each window's aggregate judged by the conditional when the window
closes. The folding is the ``aggregate`` processor's own
(``components.processors.aggregate_windows``); a firing goes into the outbox through
``alerts.pipeline_alerts.write_event_firings`` (throttled in the alert's row).

In every worker, the data plane hands each batch's outputs to ``offer`` (a dict lookup
when no such alert watches the pipeline; at most ``MAX_PENDING`` events held per alert
until the next round, more are counted in ``skipped``), and a background round about
every ``ROUND_S`` (``db.periodic``) takes them off the request path. One worker at a
time judges: the holder of the ``pipeline-events`` lease (``alerts.cursor``, renewed
each round, ``LEASE_MS``). The others hand their events to it through the
``pipeline_alert_events`` table (chunks of ``CHUNK_EVENTS``); the judge takes the rows
(a ``DELETE ... RETURNING``: each row is taken once, even by two judges in a lease's
race), folds them with its own, closes the windows that ended and writes the firings,
so a load spread over several workers, or hosts, is judged whole. Rows no judge took
within ``STALE_MS`` are dropped (counted in ``skipped``), so the table stays bounded
while no worker judges. With one worker nothing goes through the table. The alerts are
read again every ``REFRESH_S`` (an alert made, changed or deleted takes effect within
it; a changed one starts its windows again). The judge saves an alert's windows
(``pipeline_alert_windows``) in the transaction that writes the round's firings, so a
new judge (after a restart, or when the lease moves) starts from them: a window is
never lost with its worker, nor judged twice (a worker that lost the lease forgets its
own). Windows saved under another definition of the alert are not restored, nor
windows over ``MAX_SAVED_BYTES`` saved (counted in ``unsaved``).
"""

from __future__ import annotations

import hashlib
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final

import orjson
from sqlalchemy import delete, insert, select

from tidegate.alerts.cursor import EVENTS_LEASE, claim, release
from tidegate.alerts.pipeline_alerts import (
    fires,
    judged_on_events,
    watched_outputs,
    write_event_firings,
)
from tidegate.auth.secrets import Sealer
from tidegate.clock import now_ms
from tidegate.components.base import Event, NodeOutput, Offload, RunContext
from tidegate.components.processors.aggregate_windows import (
    MAX_SERIES,
    Evaluate,
    MetricAggregator,
    ScriptAggregator,
    Window,
)
from tidegate.components.processors.javascript import Script
from tidegate.config import Settings
from tidegate.db.engine import Database
from tidegate.db.periodic import PeriodicFlush
from tidegate.models import PipelineAlert, PipelineAlertEvents, PipelineAlertWindows
from tidegate.processing.fields import MISSING, FieldPath
from tidegate.runtime.compiler import CompiledPipeline, RunningNode, incoming

log = logging.getLogger("tidegate.runtime")

__all__ = ["AlertEvents"]

MAX_PENDING: Final = 10_000
ROUND_S: Final = 1.0
REFRESH_S: Final = 2.0
LEASE_MS: Final = 15_000  # a judge that stopped renewing is replaced after this
CHUNK_EVENTS: Final = 1_000  # events per row handed to the judge
TAKE_ROWS: Final = 200  # rows the judge takes a round (at most 200,000 events)
STALE_MS: Final = 60_000  # rows no judge took within this are dropped
MAX_SAVED_BYTES: Final = 1024 * 1024  # an alert's windows, as JSON, saved up to this
DEFAULT_EVENT_TIMESTAMP: Final = "timestamp"


@dataclass(slots=True)
class _Watch:
    """One alert judged on events, in this worker."""

    alert_id: str
    pipeline_id: str
    component_id: str
    outputs: tuple[str, ...]  # the arms its inputs name; () for the main output
    evaluation: dict[str, Any]
    fingerprint: bytes
    aggregator: MetricAggregator | ScriptAggregator
    group_by: list[Callable[[Any], Any]]
    pending: list[Event] = field(default_factory=list)
    # change: each series' last window, at most MAX_SERIES (the oldest seen go first)
    previous: dict[bytes, Event] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        """Names the definition the windows were folded under (saved with them)."""
        return hashlib.sha256(self.fingerprint).hexdigest()

    def saved(self) -> bytes:
        """Its windows, as ``PipelineAlertWindows.windows``."""
        previous = [[key.decode(), event] for key, event in self.previous.items()]
        return orjson.dumps(
            {"series": self.aggregator.windows(), "previous": previous}, default=str
        )

    def restore(self, saved: bytes) -> None:
        value = orjson.loads(saved)
        self.aggregator.restore(value["series"])
        self.previous = {key.encode(): event for key, event in value["previous"][-MAX_SERIES:]}

    def take(self, node: RunningNode, outputs: Mapping[str, NodeOutput]) -> list[Event]:
        """The events of a batch it judges: what its arms sent, or what reached the
        component (a source's: what it received), as the usage counts count them."""
        if self.outputs:
            output = outputs.get(node.id)
            if output is None:
                return []
            return [event for name in self.outputs for event in output.named.get(name, [])]
        if node.kind == "source":
            output = outputs.get(node.id)
            return output.main if output is not None else []
        return incoming(node, outputs)

    def series(self, aggregate: Event) -> bytes:
        values = [get(aggregate) for get in self.group_by]
        plain = [None if value is MISSING else value for value in values]
        return orjson.dumps(plain, option=orjson.OPT_SORT_KEYS, default=str)


def _fingerprint(alert: Any) -> bytes:
    return orjson.dumps(
        [alert.component_id, list(alert.inputs or []), alert.evaluation],
        option=orjson.OPT_SORT_KEYS,
    )


def _aggregator(
    evaluation: dict[str, Any], settings: Settings, name: str
) -> MetricAggregator | ScriptAggregator:
    minutes = int(evaluation.get("window_duration_minutes", 5))
    seconds = max(1, round(minutes * 60 * settings.alert_window_scale))
    operation = str(evaluation.get("operation") or "DEFAULT")
    script = evaluation.get("script") if operation == "CUSTOM" else None
    shared: dict[str, Any] = {
        "window": Window(type=evaluation.get("window_type", "tumbling"), interval=seconds),
        "evaluate": Evaluate(operation=operation, script=script),
        "group_by": list(evaluation.get("group_by") or []),
        "conditional": None,
        "event_timestamp": evaluation.get("event_timestamp") or DEFAULT_EVENT_TIMESTAMP,
        "clock": None,  # every run is given its time (RunContext.now_ms)
        "flush_at_end": False,
    }
    if script is not None:
        return ScriptAggregator(script=Script.of(script), name=name, **shared)
    return MetricAggregator(**shared)


def _count(aggregate: Event) -> int:
    """How many events the window folded (its ``metadata.aggregate.event_count``)."""
    metadata = aggregate.get("metadata")
    folded = metadata.get("aggregate") if isinstance(metadata, dict) else None
    value = folded.get("event_count") if isinstance(folded, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


class AlertEvents:
    """This worker's alerts judged on events (see the module's docstring)."""

    def __init__(self, settings: Settings, *, clock: Callable[[], int] = now_ms) -> None:
        self.settings = settings
        self.clock = clock
        self._watches: dict[str, _Watch] = {}
        self._by_pipeline: dict[str, list[_Watch]] = {}
        self._refreshed = float("-inf")
        self._sealer: Sealer | None = None
        self._timer = PeriodicFlush(
            self._next_round, interval_s=ROUND_S, name="pipeline alert events"
        )
        self.skipped = 0  # events not judged: MAX_PENDING were waiting, or left stale
        # Set by the runtime: a large round's folding runs in a worker thread.
        self.offload: Offload | None = None
        self.fired = 0
        self.owner = uuid.uuid4().hex
        self.judging = False  # this worker held the lease at its last round
        self.handed = 0  # events handed to the judging worker
        self.unsaved = 0  # rounds whose windows were too large to save

    # The data plane

    def offer(self, pipeline: CompiledPipeline, outputs: Mapping[str, NodeOutput]) -> None:
        """A batch's outputs: the events each watching alert takes, held for the round."""
        watches = self._by_pipeline.get(pipeline.pipeline_id)
        if not watches:
            return
        nodes = {node.id: node for node in pipeline.nodes}
        for watch in watches:
            node = nodes.get(watch.component_id)
            if node is None:  # not in the published revision
                continue
            events = watch.take(node, outputs)
            room = MAX_PENDING - len(watch.pending)
            if len(events) > room:
                self.skipped += len(events) - max(room, 0)
                events = events[: max(room, 0)]
            watch.pending.extend(events)

    # The rounds

    async def refresh(self, db: Database) -> None:
        """The active alerts judged on events, read again; a new or changed one gets
        fresh windows, an unchanged one keeps its own."""
        async with db.read_sessions() as session:
            rows = (
                await session.execute(
                    select(
                        PipelineAlert.id,
                        PipelineAlert.pipeline_id,
                        PipelineAlert.component_id,
                        PipelineAlert.inputs,
                        PipelineAlert.evaluation,
                    ).where(PipelineAlert.active.is_(True))
                )
            ).all()
        watches: dict[str, _Watch] = {}
        for row in rows:
            if not judged_on_events(row.evaluation):
                continue
            fingerprint = _fingerprint(row)
            kept = self._watches.get(row.id)
            if kept is not None and kept.fingerprint == fingerprint:
                watches[row.id] = kept
                continue
            try:
                aggregator = self._aggregator(row.id, row.pipeline_id, row.evaluation)
            except ValueError as error:  # stored before a rule became stricter
                log.warning("pipeline alert %s is not judged: %s", row.id, error)
                continue
            watches[row.id] = _Watch(
                alert_id=row.id,
                pipeline_id=row.pipeline_id,
                component_id=row.component_id,
                outputs=tuple(watched_outputs(row)),
                evaluation=row.evaluation,
                fingerprint=fingerprint,
                aggregator=aggregator,
                group_by=[
                    FieldPath.parse(text).getter() for text in row.evaluation.get("group_by") or []
                ],
            )
        by_pipeline: dict[str, list[_Watch]] = {}
        for watch in watches.values():
            by_pipeline.setdefault(watch.pipeline_id, []).append(watch)
        gone = self._watches.keys() - watches.keys()
        self._watches, self._by_pipeline = watches, by_pipeline
        if gone and self.judging:  # deleted, changed or paused: their windows are not kept
            async with db.write_sessions() as session:
                await session.execute(
                    delete(PipelineAlertWindows).where(PipelineAlertWindows.alert_id.in_(gone))
                )
                await session.commit()

    async def round(self, db: Database, sealer: Sealer, *, at_ms: int | None = None) -> int:
        """Folds what each alert holds, closes the windows that ended by ``at_ms`` (now
        by default), judges them and writes the firings; how many were written."""
        now = self.clock() if at_ms is None else at_ms
        if time.monotonic() - self._refreshed >= REFRESH_S:
            await self.refresh(db)
            self._refreshed = time.monotonic()
        if not self._watches:
            return 0
        if not await self._hold(db):
            await self._hand_over(db)
            return 0
        await self._take_handed(db)
        written = 0
        for watch in list(self._watches.values()):
            firings: list[tuple[Event, int]] = []
            events, watch.pending = watch.pending, []
            given = {id(event) for event in events}
            context = RunContext(offload=self.offload, now_ms=now)
            output = await watch.aggregator.run(events, context=context)
            if not events and not output.main:
                continue  # nothing folded, no window closed: the saved windows stand
            for aggregate in output.main:
                if id(aggregate) in given:
                    continue  # an event the operation cannot fold (not a metric): passed
                key = watch.series(aggregate)
                previous = watch.previous.get(key)
                if watch.evaluation.get("alert_type") == "change":
                    watch.previous.pop(key, None)
                    watch.previous[key] = aggregate  # the newest last
                    if len(watch.previous) > MAX_SERIES:  # series that came and went
                        del watch.previous[next(iter(watch.previous))]
                if fires(watch.evaluation, aggregate, previous):
                    firings.append((aggregate, _count(aggregate)))
            written += await self._commit(db, sealer, watch, firings, now)
        self.fired += written
        return written

    async def _commit(
        self,
        db: Database,
        sealer: Sealer,
        watch: _Watch,
        firings: list[tuple[Event, int]],
        now: int,
    ) -> int:
        """A round's firings of one alert and its windows as they now are, in one
        transaction: a judge that stops between two rounds leaves windows that were
        judged or are to be, never one judged twice."""
        saved = await self._encoded(watch.saved, watch.aggregator.series)
        table = PipelineAlertWindows
        async with db.write_sessions() as session:
            fired = await write_event_firings(
                session, sealer, self.settings, alert_id=watch.alert_id, firings=firings, now_ms=now
            )
            await session.execute(delete(table).where(table.alert_id == watch.alert_id))
            if len(saved) <= MAX_SAVED_BYTES:
                session.add(
                    table(
                        alert_id=watch.alert_id,
                        fingerprint=watch.digest,
                        saved_ms=self.clock(),
                        windows=saved,
                    )
                )
            else:  # a new judge starts this alert's windows again
                self.unsaved += 1
            await session.commit()
        return fired

    async def _restore(self, db: Database) -> None:
        """A new judge: each alert's windows as the last judge saved them, when folded
        under the alert's present definition."""
        if not self._watches:
            return
        table = PipelineAlertWindows
        async with db.read_sessions() as session:
            rows = (
                await session.execute(
                    select(table.alert_id, table.fingerprint, table.windows).where(
                        table.alert_id.in_(list(self._watches))
                    )
                )
            ).all()
        for alert_id, digest, saved in rows:
            watch = self._watches.get(alert_id)
            if watch is None or watch.digest != digest:
                continue
            try:
                await self._encoded(partial(watch.restore, saved), len(saved) // 1000)
            except Exception:  # saved by a release that kept them otherwise
                log.warning("pipeline alert %s: its saved windows were not read", alert_id)

    def start(self, db: Database, sealer: Sealer) -> None:
        self._sealer = sealer
        self._timer.start(db)

    async def close(self, db: Database) -> None:
        """Stops the rounds (after one last: the windows that ended are judged, or the
        events held handed to the judge) and gives the lease up."""
        await self._timer.close(db)
        if self.judging:
            self.judging = False
            try:
                async with db.write_sessions() as session:
                    await release(session, owner=self.owner, name=EVENTS_LEASE)
                    await session.commit()
            except Exception:  # the lease then lapses by itself
                log.warning("pipeline alert events: the lease was not given up", exc_info=True)

    # Which worker judges

    def _aggregator(
        self, alert_id: str, pipeline_id: str, evaluation: dict[str, Any]
    ) -> MetricAggregator | ScriptAggregator:
        return _aggregator(evaluation, self.settings, f"alert {alert_id} of pipeline {pipeline_id}")

    async def _hold(self, db: Database) -> bool:
        """Takes or renews the lease; a worker that lost it forgets its windows (the
        new judge has judged what came since)."""
        async with db.write_sessions() as session:
            held = await claim(
                session, owner=self.owner, now_ms=self.clock(), lease_ms=LEASE_MS, name=EVENTS_LEASE
            )
            await session.commit()
        if self.judging and not held:
            log.info("pipeline alert events: another worker judges them now")
            for watch in self._watches.values():
                watch.aggregator = self._aggregator(
                    watch.alert_id, watch.pipeline_id, watch.evaluation
                )
                watch.previous.clear()
        elif held and not self.judging:
            await self._restore(db)
        self.judging = held
        return held

    async def _encoded(self, function: Callable[[], Any], work: int) -> Any:
        if self.offload is None:
            return function()
        return await self.offload(function, work=work)

    async def _hand_over(self, db: Database) -> None:
        """This worker's held events, into the table the judge takes them from. If the
        database refuses them they are held again (up to ``MAX_PENDING``)."""
        held = [(watch, watch.pending) for watch in self._watches.values() if watch.pending]
        if not held:
            return
        for watch, _ in held:
            watch.pending = []
        created = self.clock()

        def rows() -> list[dict[str, Any]]:
            return [
                {
                    "alert_id": watch.alert_id,
                    "created_ms": created,
                    "count": len(events[start : start + CHUNK_EVENTS]),
                    "events": orjson.dumps(events[start : start + CHUNK_EVENTS], default=str),
                }
                for watch, events in held
                for start in range(0, len(events), CHUNK_EVENTS)
            ]

        try:
            values = await self._encoded(rows, sum(len(events) for _, events in held))
            async with db.write_sessions() as session:
                await session.execute(insert(PipelineAlertEvents), values)
                await session.commit()
        except Exception:
            for watch, events in held:
                watch.pending = (events + watch.pending)[:MAX_PENDING]
            raise
        self.handed += sum(len(events) for _, events in held)

    async def _take_handed(self, db: Database) -> None:
        """The judge: the rows the other workers handed over (the oldest
        ``TAKE_ROWS``), each taken once, added to what each alert holds; rows older
        than ``STALE_MS`` are dropped, and rows of alerts no longer judged."""
        table = PipelineAlertEvents
        async with db.write_sessions() as session:
            stale = await session.execute(
                delete(table)
                .where(table.created_ms < self.clock() - STALE_MS)
                .returning(table.count)
            )
            self.skipped += sum(stale.scalars())
            oldest = select(table.id).order_by(table.id).limit(TAKE_ROWS)
            taken = (
                await session.execute(
                    delete(table)
                    .where(table.id.in_(oldest))
                    .returning(table.alert_id, table.events)
                )
            ).all()
            await session.commit()
        if not taken:
            return

        def decoded() -> list[tuple[str, list[Event]]]:
            return [(alert_id, orjson.loads(events)) for alert_id, events in taken]

        handed = await self._encoded(decoded, sum(len(events) for _, events in taken) // 100)
        for alert_id, events in handed:
            watch = self._watches.get(alert_id)
            if watch is None:  # paused, or changed to be judged on the counts
                self.skipped += len(events)
            else:
                watch.pending = events + watch.pending

    async def _next_round(self, db: Database) -> None:
        if self._sealer is None:
            return
        try:
            await self.round(db, self._sealer)
        except Exception:  # the database may be down for a while: the next round
            log.warning("pipeline alert events round failed", exc_info=True)

"""What one worker holds for the data plane: compiled pipelines, running throttles,
http destinations, the gates of back-pressure, live taps and usage counts. Built once
per app by its lifespan (``build_runtime``), started and closed with it."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import httpx
from fastapi import FastAPI
from redis.asyncio import Redis

from tidegate import metrics
from tidegate.config import Settings
from tidegate.db.engine import Database
from tidegate.ingest.exclusion import RuleCache, RuleSet
from tidegate.ingest.service import IngestOutcome, exclusion_rules, judge
from tidegate.logs.store import NewLine
from tidegate.logs.tail import TailBroker
from tidegate.logs.writer import LineWriter
from tidegate.pipelines.node_configs import HttpDestinationConfig
from tidegate.processing.throttle import ThrottleBudget
from tidegate.runtime.backpressure import Gates
from tidegate.runtime.cache import PipelineCache, ThrottleRegistry
from tidegate.runtime.compiler import CompiledPipeline, NodeOutput, Offload, RunningNode
from tidegate.runtime.destination_guard import (
    DestinationPolicy,
    GuardedTransport,
    policy_from_setting,
)
from tidegate.runtime.http_destination import DeliveryFailed, HttpDestination
from tidegate.runtime.limits import RuntimeLimits
from tidegate.runtime.log_lines import event_to_line
from tidegate.runtime.tap import TapRegistry
from tidegate.runtime.usage import UsageCounter

log = logging.getLogger("tidegate.runtime")

__all__ = ["Delivery", "Runtime", "build_runtime", "runtime_of"]

Event = dict[str, Any]
T = TypeVar("T")


@dataclass(slots=True)
class Delivery:
    """What one request hands to destinations."""

    log_events: dict[str, list[Event]] = field(default_factory=dict)  # by account
    http: list[tuple[str, RunningNode, list[Event]]] = field(default_factory=list)
    discarded: int = 0

    def add(self, pipeline: CompiledPipeline, outputs: dict[str, NodeOutput]) -> None:
        for node in pipeline.destinations():
            events = outputs[node.id].main
            if not events:
                continue
            if node.type == "log_analysis":
                self.log_events.setdefault(pipeline.account_id, []).extend(events)
            elif node.type == "http":
                self.http.append((pipeline.pipeline_id, node, events))
            else:  # blackhole
                self.discarded += len(events)


class Runtime:
    def __init__(
        self,
        *,
        limits: RuntimeLimits,
        redis: Redis | None,
        destinations: DestinationPolicy | None = None,
        throttle_budget: ThrottleBudget | None = None,
        usage_flush_s: float = 5.0,
    ) -> None:
        self.limits = limits
        self.taps = TapRegistry(redis)
        self.usage = UsageCounter(flush_s=usage_flush_s)
        self.destinations = destinations or DestinationPolicy()
        self.throttles = ThrottleRegistry(redis, budget=throttle_budget)
        self.pipelines = PipelineCache(self.throttles, max_pipelines=limits.max_pipelines)
        self.route_gates = Gates(limits.route_inflight)
        self.destination_gates = Gates(limits.destination_inflight)
        self._client: httpx.AsyncClient | None = None
        self._cpu: anyio.CapacityLimiter | None = None
        self._senders: dict[tuple[str, str], tuple[str, HttpDestination]] = {}

    @property
    def client(self) -> httpx.AsyncClient:
        if self._client is None:
            # Every connection goes through the destination policy (no proxy from the
            # environment: a proxy would do the connecting instead).
            transport = GuardedTransport(
                self.destinations,
                limits=httpx.Limits(max_connections=512, max_keepalive_connections=128),
            )
            self._client = httpx.AsyncClient(
                transport=transport,
                trust_env=False,
                follow_redirects=False,
                headers={"User-Agent": "tidegate-gateway"},
            )
        return self._client

    async def offload(self, function: Callable[[], T], *, work: int) -> T:
        """``function()`` in a worker thread, at most ``cpu_slots`` at once per worker;
        on the loop when ``work`` is below the threshold."""
        if work < self.limits.offload_threshold:
            return function()
        if self._cpu is None:
            self._cpu = anyio.CapacityLimiter(self.limits.cpu_slots)
        return await anyio.to_thread.run_sync(function, limiter=self._cpu)

    async def start(self, db: Database) -> None:
        await self.taps.start()
        self.usage.start(db)

    async def aclose(self, db: Database | None = None) -> None:
        await self.taps.close()
        if db is not None:
            await self.usage.close(db)
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def observe(
        self,
        pipeline: CompiledPipeline,
        outputs: dict[str, NodeOutput],
        *,
        batch: int,
        body_bytes: int,
        now_ms: int,
    ) -> None:
        """A batch ran through ``pipeline``: open taps see it, usage counts it."""
        self.taps.offer(pipeline.pipeline_id, outputs)
        self.usage.count(
            account_id=pipeline.account_id,
            pipeline_id=pipeline.pipeline_id,
            nodes=pipeline.nodes,
            outputs=outputs,
            batch=batch,
            body_bytes=body_bytes,
            now_ms=now_ms,
        )

    @contextmanager
    def admit(self, gateway_route_id: str, pipelines: Sequence[CompiledPipeline]) -> Iterator[None]:
        """Room for one more request on the route and on each of its http destinations,
        or ``Saturated`` before any event is processed."""
        destinations = [
            (pipeline.pipeline_id, node.id)
            for pipeline in pipelines
            for node in pipeline.destinations("http")
        ]
        with self.route_gates.hold([gateway_route_id]), self.destination_gates.hold(destinations):
            yield

    def sender(self, pipeline_id: str, node: RunningNode) -> HttpDestination:
        found = self._senders.get((pipeline_id, node.id))
        if found is not None and found[0] == node.fingerprint:
            return found[1]
        assert isinstance(node.config, HttpDestinationConfig)
        sender = HttpDestination(
            node.config,
            client=self.client,
            concurrency=self.limits.http_concurrency,
            backoff_base_ms=self.limits.backoff_base_ms,
            backoff_cap_ms=self.limits.backoff_cap_ms,
            name=f"http destination {node.id} of pipeline {pipeline_id}",
        )
        if len(self._senders) >= 4 * self.limits.max_pipelines:
            self._senders.clear()
        self._senders[(pipeline_id, node.id)] = (node.fingerprint, sender)
        return sender

    async def deliver(
        self,
        delivery: Delivery,
        *,
        db: Database,
        writer: LineWriter,
        received_ms: int,
        tail: TailBroker | None = None,
        rules: RuleCache | None = None,
    ) -> None:
        """Store and send everything, concurrently; raises ``DeliveryFailed`` unless every
        destination took its events (log store committed, http acknowledged). Stored
        lines go to live tail once committed."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.limits.delivery_deadline_ms / 1000
        jobs = [
            self._send_http(pipeline_id, node, events, deadline)
            for pipeline_id, node, events in delivery.http
        ]
        if delivery.log_events:
            jobs.append(
                _store(
                    db,
                    writer,
                    delivery.log_events,
                    received_ms,
                    tail,
                    rules or RuleCache(),
                    self.offload,
                )
            )
        if not jobs:
            return
        results = await asyncio.gather(*jobs, return_exceptions=True)
        failures = [result for result in results if isinstance(result, BaseException)]
        for failure in failures:
            if not isinstance(failure, Exception):  # cancellation: not ours to swallow
                raise failure
        if failures:
            for failure in failures:
                log.warning("delivery failed: %s", failure)
            raise DeliveryFailed("; ".join(str(failure) for failure in failures))

    async def _send_http(
        self, pipeline_id: str, node: RunningNode, events: list[Event], deadline: float
    ) -> None:
        sender = self.sender(pipeline_id, node)
        try:
            async with asyncio.timeout_at(deadline):
                await sender.send(events, deadline=deadline, offload=self.offload)
        except TimeoutError:
            raise DeliveryFailed(f"{sender.name}: slower than the delivery deadline") from None


async def _store(
    db: Database,
    writer: LineWriter,
    by_account: dict[str, list[Event]],
    received_ms: int,
    tail: TailBroker | None,
    rules: RuleCache,
    offload: Offload,
) -> None:
    """Into the log store through the account's exclusion rules, exactly as ingestion:
    excluded lines are counted, not stored; indexonly ones still reach live tail. Every
    account's lines go to the worker's writer as one write (group commit): all of them
    are stored, or none, as the request is answered."""
    outcomes: list[IngestOutcome] = []
    for account_id, events in by_account.items():
        ruleset = await exclusion_rules(db=db, account_id=account_id, cache=rules)
        outcomes.append(
            await offload(
                partial(_judged, account_id, events, received_ms, ruleset), work=len(events)
            )
        )
    await writer.write([outcome.batch for outcome in outcomes if outcome.batch is not None])
    if tail is not None:
        for outcome in outcomes:
            # never raises, never blocks
            await tail.publish(outcome.account_id, [*outcome.stored, *outcome.tail_only])


def _judged(
    account_id: str, events: list[Event], received_ms: int, ruleset: RuleSet
) -> IngestOutcome:
    """The events as lines, through the exclusion rules, and the rows to store (CPU
    work: may run in a thread)."""
    outcome = IngestOutcome(account_id=account_id)
    for event in events:
        judge(outcome, _line(event, received_ms), ruleset)
    outcome.to_store(received_ms)
    return outcome


_TIME_FIELDS = ("timestamp", "ts", "time")


def _line(event: Event, received_ms: int) -> NewLine:
    """The event's line. A value the conversion cannot handle must not fail the batch:
    the request would fail again on every retry (a poison batch). The event is then
    stored without its time fields (at the receive time), or, failing that, as text."""
    try:
        return event_to_line(event, received_ms=received_ms)
    except Exception as error:  # any: one event may never fail its neighbours
        log.warning("event stored with a fallback: %s: %s", type(error).__name__, error)
    try:
        rest = {key: value for key, value in event.items() if key not in _TIME_FIELDS}
        return event_to_line(rest, received_ms=received_ms)
    except Exception:  # any, as above
        return event_to_line({"line": repr(event)[:32_768]}, received_ms=received_ms)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def build_runtime(settings: Settings, *, redis: Redis | None) -> Runtime:
    """The worker's runtime, from its settings (called by the app's lifespan)."""
    return Runtime(
        limits=RuntimeLimits.from_env(),
        redis=redis,
        destinations=policy_from_setting(settings.destination_allow),
        throttle_budget=ThrottleBudget(
            max_keys=settings.throttle_max_keys,
            max_bytes=settings.throttle_max_bytes,
            listener=metrics.throttle_budget_changed,
        ),
        usage_flush_s=settings.pipeline_usage_flush_s,
    )


def runtime_of(app: FastAPI) -> Runtime:
    runtime: Runtime = app.state.tidegate.pipelines
    return runtime

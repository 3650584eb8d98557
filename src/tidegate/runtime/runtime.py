"""What one worker holds for the data plane: compiled pipelines, running throttles,
http destinations, the gates of back-pressure, live taps and usage counts. Built once
per app by its lifespan (``build_runtime``), started and closed with it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import httpx
from fastapi import FastAPI
from redis.asyncio import Redis

from tidegate import metrics
from tidegate.auth.secrets import Sealer
from tidegate.components.base import BuildContext, DeliveryContext, NodeRef
from tidegate.config import DEFAULT_REDIS_PREFIX, Settings
from tidegate.db.engine import Database
from tidegate.delivery import DeliveryFailed
from tidegate.kit.destination_guard import (
    DestinationPolicy,
    GuardedTransport,
    policy_from_setting,
)
from tidegate.kit.tap import TapRegistry
from tidegate.logs.intake import LineIntake
from tidegate.processing.throttle import RedisStore, ThrottleBudget
from tidegate.runtime.alert_events import AlertEvents
from tidegate.runtime.backpressure import Gates
from tidegate.runtime.cache import PipelineCache, throttle_key_prefix
from tidegate.runtime.compiler import CompiledPipeline, NodeOutput
from tidegate.runtime.delivery import Delivery
from tidegate.runtime.demo_logs import DemoLogsScheduler
from tidegate.runtime.ingestion_feed import IngestionFeed
from tidegate.runtime.limits import RuntimeLimits
from tidegate.runtime.pull_sources import PullScheduler
from tidegate.runtime.usage import UsageCounter

log = logging.getLogger("tidegate.runtime")

__all__ = ["Runtime", "build_runtime", "runtime_of"]

Event = dict[str, Any]
T = TypeVar("T")


class Runtime:
    def __init__(
        self,
        *,
        limits: RuntimeLimits,
        redis: Redis | None,
        redis_prefix: str = DEFAULT_REDIS_PREFIX,
        destinations: DestinationPolicy | None = None,
        throttle_budget: ThrottleBudget | None = None,
        usage_flush_s: float = 5.0,
        s3_endpoint: str = "",
        endpoints: Mapping[str, str] | None = None,
        alert_events: AlertEvents | None = None,
    ) -> None:
        self.limits = limits
        self.taps = TapRegistry(redis, redis_prefix=redis_prefix)
        self.usage = UsageCounter(flush_s=usage_flush_s)
        # Pipeline alerts judged on the events themselves (None: alerts are off); their
        # folding of a large round off the loop, as processors' is.
        self.alert_events = alert_events
        if alert_events is not None:
            alert_events.offload = self.offload
        self.destinations = destinations or DestinationPolicy()
        self.throttle_budget = throttle_budget
        self.pipelines = PipelineCache(
            BuildContext(
                throttle_store=partial(_throttle_store, redis, redis_prefix),
                throttle_budget=throttle_budget,
                http_client=lambda: self.client,
                destination_policy=self.destinations,
                http_concurrency=limits.http_concurrency,
                backoff_base_ms=limits.backoff_base_ms,
                backoff_cap_ms=limits.backoff_cap_ms,
                s3_endpoint=s3_endpoint,
                endpoints=dict(endpoints or {}),
            ),
            max_pipelines=limits.max_pipelines,
        )
        self.route_gates = Gates(limits.route_inflight)
        self.destination_gates = Gates(limits.destination_inflight)
        self._client: httpx.AsyncClient | None = None
        self._cpu: anyio.CapacityLimiter | None = None
        self.ingestion_feed = IngestionFeed()
        self.demo_logs = DemoLogsScheduler(redis=redis, redis_prefix=redis_prefix)
        self.pull_sources = PullScheduler()
        self.s3_endpoint = s3_endpoint

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

    async def start(
        self, db: Database, *, intake: LineIntake | None = None, sealer: Sealer | None = None
    ) -> None:
        """``intake``: the worker's writer of lines, for sources tidegate feeds itself
        (demo-logs generates on a schedule once it is given); ``sealer``: for the alerts
        judged on events to open their payloads."""
        await self.taps.start()
        self.usage.start(db)
        if self.alert_events is not None and sealer is not None:
            self.alert_events.start(db, sealer)
        if intake is not None:
            self.demo_logs.start(self, intake)
            self.pull_sources.start(self, intake)

    async def aclose(self, db: Database | None = None) -> None:
        if self.alert_events is not None and db is not None:
            await self.alert_events.close(db)
        await self.demo_logs.close()
        await self.pull_sources.close()
        await self.pipelines.runtimes.aclose()
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
        taken = pipeline.taken_outputs
        self.taps.offer(pipeline.pipeline_id, outputs, taken)
        if self.alert_events is not None:
            self.alert_events.offer(pipeline, outputs)
        self.usage.count(
            account_id=pipeline.account_id,
            pipeline_id=pipeline.pipeline_id,
            nodes=pipeline.nodes,
            outputs=outputs,
            taken=taken,
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
            for node in pipeline.destinations()
            if node.component.outbound
        ]
        with self.route_gates.hold([gateway_route_id]), self.destination_gates.hold(destinations):
            yield

    async def deliver(
        self,
        delivery: Delivery,
        *,
        intake: LineIntake,
        received_ms: int,
    ) -> None:
        """Store and send everything, concurrently; raises ``DeliveryFailed`` unless every
        destination took its events (log store committed, http acknowledged). Stored
        lines go to live tail once committed."""
        loop = asyncio.get_running_loop()
        context = DeliveryContext(
            intake=intake,
            received_ms=received_ms,
            deadline=loop.time() + self.limits.delivery_deadline_ms / 1000,
            offload=self.offload,
        )
        jobs = [
            component.deliver(parcels, context)
            for component, parcels in delivery.parcels.items()
            if component.deliver is not None
        ]
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


def _throttle_store(redis: Redis | None, redis_prefix: str, node: NodeRef) -> RedisStore | None:
    if redis is None:
        return None
    return RedisStore(redis, key_prefix=throttle_key_prefix(node, redis_prefix=redis_prefix))


def build_runtime(settings: Settings, *, redis: Redis | None) -> Runtime:
    """The worker's runtime, from its settings (called by the app's lifespan)."""
    return Runtime(
        limits=RuntimeLimits.from_settings(settings),
        redis=redis,
        redis_prefix=settings.redis_prefix,
        destinations=policy_from_setting(settings.destination_allow),
        throttle_budget=ThrottleBudget(
            max_keys=settings.throttle_max_keys,
            max_bytes=settings.throttle_max_bytes,
            listener=metrics.throttle_budget_changed,
        ),
        usage_flush_s=settings.pipeline_usage_flush_s,
        s3_endpoint=settings.s3_endpoint,
        endpoints=endpoints_from_setting(settings.destination_endpoints),
        alert_events=AlertEvents(settings) if settings.alerts_enabled else None,
    )


def endpoints_from_setting(text: str) -> dict[str, str]:
    """``TIDEGATE_DESTINATION_ENDPOINTS`` (``type=url,type=url``) as a mapping."""
    pairs = (item.split("=", 1) for item in text.split(",") if item)
    return {name: url.rstrip("/") for name, url in pairs}


def runtime_of(app: FastAPI) -> Runtime:
    runtime: Runtime = app.state.tidegate.pipelines
    return runtime

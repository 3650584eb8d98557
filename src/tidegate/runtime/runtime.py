"""What one worker holds for the data plane: compiled pipelines, running throttles,
http destinations, the gates of back-pressure. Created on first use, one per app."""

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
from tidegate.components.base import (
    BuildContext,
    Component,
    DeliveryContext,
    DeliveryFailed,
    NodeRef,
    Parcel,
)
from tidegate.config import Settings
from tidegate.logs.intake import LineIntake
from tidegate.processing.throttle import RedisStore, ThrottleBudget
from tidegate.runtime.backpressure import Gates
from tidegate.runtime.cache import PipelineCache, throttle_key_prefix
from tidegate.runtime.compiler import CompiledPipeline, NodeOutput
from tidegate.runtime.destination_guard import (
    DestinationPolicy,
    GuardedTransport,
    policy_from_setting,
)
from tidegate.runtime.ingestion_feed import IngestionFeed
from tidegate.runtime.limits import RuntimeLimits

log = logging.getLogger("tidegate.runtime")

__all__ = ["Delivery", "Runtime", "close_runtime", "runtime_of"]

Event = dict[str, Any]
T = TypeVar("T")


@dataclass(slots=True)
class Delivery:
    """What one request hands to destinations, by component (each component delivers
    all its parcels of the request at once)."""

    parcels: dict[Component[Any], list[Parcel]] = field(default_factory=dict)

    def add(self, pipeline: CompiledPipeline, outputs: dict[str, NodeOutput]) -> None:
        for node in pipeline.destinations():
            events = outputs[node.id].main
            if not events or node.component.deliver is None:
                continue
            self.parcels.setdefault(node.component, []).append(
                Parcel(pipeline.pipeline_id, pipeline.account_id, node.id, node.runtime, events)
            )


class Runtime:
    def __init__(
        self,
        *,
        limits: RuntimeLimits,
        redis: Redis | None,
        destinations: DestinationPolicy | None = None,
        throttle_budget: ThrottleBudget | None = None,
    ) -> None:
        self.limits = limits
        self.destinations = destinations or DestinationPolicy()
        self.throttle_budget = throttle_budget
        self.pipelines = PipelineCache(
            BuildContext(
                throttle_store=partial(_throttle_store, redis),
                throttle_budget=throttle_budget,
                http_client=lambda: self.client,
                destination_policy=self.destinations,
                http_concurrency=limits.http_concurrency,
                backoff_base_ms=limits.backoff_base_ms,
                backoff_cap_ms=limits.backoff_cap_ms,
            ),
            max_pipelines=limits.max_pipelines,
        )
        self.route_gates = Gates(limits.route_inflight)
        self.destination_gates = Gates(limits.destination_inflight)
        self._client: httpx.AsyncClient | None = None
        self._cpu: anyio.CapacityLimiter | None = None
        self.ingestion_feed = IngestionFeed()

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

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

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


def _throttle_store(redis: Redis | None, node: NodeRef) -> RedisStore | None:
    if redis is None:
        return None
    return RedisStore(redis, key_prefix=throttle_key_prefix(node))


def now_ms() -> int:
    return time.time_ns() // 1_000_000


_ATTRIBUTE = "tidegate_runtime"


def runtime_of(app: FastAPI, *, redis: Redis | None) -> Runtime:
    runtime: Runtime | None = getattr(app.state, _ATTRIBUTE, None)
    if runtime is None:
        allow = app.state.tidegate.settings.destination_allow
        runtime = Runtime(
            limits=RuntimeLimits.from_env(),
            redis=redis,
            destinations=policy_from_setting(allow),
            throttle_budget=_throttle_budget(app),
        )
        setattr(app.state, _ATTRIBUTE, runtime)
    return runtime


def _throttle_budget(app: FastAPI) -> ThrottleBudget:
    """The worker's budget for in-memory throttle state, from the app's settings."""
    state = getattr(app.state, "tidegate", None)
    settings = Settings.from_env() if state is None else state.settings
    return ThrottleBudget(
        max_keys=settings.throttle_max_keys,
        max_bytes=settings.throttle_max_bytes,
        listener=metrics.throttle_budget_changed,
    )


async def close_runtime(app: FastAPI) -> None:
    runtime: Runtime | None = getattr(app.state, _ATTRIBUTE, None)
    if runtime is not None:
        await runtime.aclose()
        setattr(app.state, _ATTRIBUTE, None)

"""Per-worker limits of the data plane: how much work one gateway route or destination
may have in flight before the gateway answers 429/503 instead of queueing."""

from __future__ import annotations

from dataclasses import dataclass

from tidegate.config import Settings


@dataclass(frozen=True, slots=True)
class RuntimeLimits:
    route_inflight: int = 64
    """Gateway requests being processed at once for one route, per worker (then 429)."""
    destination_inflight: int = 32
    """Gateway requests delivering to one http destination at once, per worker (then 503)."""
    http_concurrency: int = 4
    """POSTs in flight to one http destination at once, per worker."""
    delivery_deadline_ms: int = 10_000
    """Budget of a request's http deliveries, retries included (then 503)."""
    backoff_base_ms: int = 100
    backoff_cap_ms: int = 5_000
    max_pipelines: int = 10_000
    """Compiled pipelines kept per worker (least recently used leave first)."""
    cpu_slots: int = 2
    """CPU-heavy jobs of gateway requests (inflate and parse, a filter or the log line
    conversion over a large batch) running at once per worker, each in a worker thread;
    the others wait. Also bounds the memory those jobs take at one time."""
    offload_threshold: int = 1_000
    """Work (events; bytes / 64 for bodies) below which a job runs on the loop: a thread
    hop costs more than it saves."""

    @classmethod
    def from_settings(cls, settings: Settings) -> RuntimeLimits:
        return cls(
            route_inflight=settings.gateway_route_inflight,
            destination_inflight=settings.gateway_destination_inflight,
            http_concurrency=settings.gateway_http_concurrency,
            delivery_deadline_ms=settings.gateway_deadline_ms,
            cpu_slots=settings.gateway_cpu_slots,
        )

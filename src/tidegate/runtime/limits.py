"""Per-worker limits of the data plane: how much work one gateway route or destination
may have in flight before the gateway answers 429/503 instead of queueing."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass


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
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RuntimeLimits:
        env = os.environ if environ is None else environ
        names = {
            "route_inflight": "TIDEGATE_GATEWAY_ROUTE_INFLIGHT",
            "destination_inflight": "TIDEGATE_GATEWAY_DESTINATION_INFLIGHT",
            "http_concurrency": "TIDEGATE_GATEWAY_HTTP_CONCURRENCY",
            "delivery_deadline_ms": "TIDEGATE_GATEWAY_DEADLINE_MS",
            "cpu_slots": "TIDEGATE_GATEWAY_CPU_SLOTS",
        }
        values: dict[str, int] = {}
        for field, name in names.items():
            raw = env.get(name)
            if raw:
                value = int(raw)
                if value < 1:
                    raise ValueError(f"{name} must be at least 1")
                values[field] = value
        return cls(**values)

"""The ``prometheus-remote-write`` destination: metric events to a Prometheus remote
write 1.0 receiver (Prometheus with ``--web.enable-remote-write-receiver``, Mimir,
Cortex, Thanos, VictoriaMetrics...), as the platform's Terraform provider configures it
(``internal/provider/models/destinations/prometheus_remote_write.go``): ``endpoint``
(the full URL, e.g. ``http://prom:9090/api/v1/write``), ``auth`` (``{strategy: basic,
user, password}``, ``{strategy: bearer, token}`` or ``{strategy: none}``, the
provider's form when no auth is set; the attributes it leaves empty are sent too),
``ack_enabled``.

Each delivery's metric events (``components/prometheus_wire.py``) become one or more
``POST``s of at most ``MAX_SERIES`` series (snappy ``WriteRequest``), retried,
backed off and guarded like the other outbound destinations (``outbound.py``). A
sample's time is the event's ``timestamp`` (the one timestamp rule), else the time the
request was received. **Decisions:** events that are not metrics (no ``name`` and
``value: {type, value}`` of a known type) are skipped, counted in the log; an
``incremental`` counter or sum is added to a running total per series, kept per node
and worker (at most ``MAX_TOTALS`` series, least recently written forgotten first) and
sent as the total Prometheus expects: a delivery the sender retries (after a failure)
is counted again, and totals start again from zero on a restart.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from functools import partial
from typing import Any, Final

import cramjam
from pydantic import BaseModel, ConfigDict, HttpUrl

from tidegate.components.base import BuildContext, Component
from tidegate.components.destinations.outbound import Encoder, outbound_component
from tidegate.components.destinations.wire import Auth, WireRequest, auth_headers
from tidegate.components.prometheus_wire import (
    HEADERS,
    Labels,
    metric_series,
    series_key,
    write_request,
)
from tidegate.logs.timestamps import epoch_ms

__all__ = [
    "COMPONENT",
    "MAX_SERIES",
    "MAX_TOTALS",
    "PrometheusRemoteWriteConfig",
    "RunningTotals",
    "remote_write_requests",
]

log = logging.getLogger("tidegate.runtime.http")

MAX_SERIES: Final = 5_000
MAX_TOTALS: Final = 100_000
_INCREMENTAL_TYPES: Final = frozenset({"counter", "sum"})


class PrometheusRemoteWriteConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    endpoint: HttpUrl
    auth: Auth | None = None
    ack_enabled: bool = True


class RunningTotals:
    """Per node and worker: the running total of each incremental series (bounded;
    encoders may run in worker threads, hence the lock)."""

    def __init__(self, limit: int = MAX_TOTALS) -> None:
        self._limit = limit
        self._totals: OrderedDict[Labels, float] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, key: Labels, delta: float) -> float:
        with self._lock:
            total = self._totals.pop(key, 0.0) + delta
            self._totals[key] = total
            while len(self._totals) > self._limit:
                self._totals.popitem(last=False)
            return total


def remote_write_requests(
    events: Sequence[Any],
    config: PrometheusRemoteWriteConfig,
    *,
    received_ms: int,
    totals: RunningTotals | None = None,
) -> list[WireRequest]:
    """The snappy ``WriteRequest`` POSTs carrying ``events``' series (CPU work: may run
    in a worker thread). Without ``totals``, incremental values are sent as they are."""
    series: dict[Labels, list[tuple[int, float]]] = {}
    skipped = 0
    for event in events:
        made = False
        for name, labels, number in metric_series(event):
            made = True
            key = series_key(name, labels)
            stamp = epoch_ms(event.get("timestamp")) or received_ms
            value = number
            if (
                totals is not None
                and event.get("kind") == "incremental"
                and event["value"].get("type") in _INCREMENTAL_TYPES
            ):
                value = totals.add(key, number)
            series.setdefault(key, []).append((stamp, value))
        skipped += not made
    if skipped:
        log.info("prometheus-remote-write: %s events that are not metrics skipped", skipped)
    headers = (*HEADERS, *auth_headers(config.auth))
    keys = list(series)
    return [
        WireRequest(
            "POST",
            str(config.endpoint),
            headers,
            bytes(
                cramjam.snappy.compress_raw(
                    write_request({key: series[key] for key in keys[start : start + MAX_SERIES]})
                )
            ),
        )
        for start in range(0, len(keys), MAX_SERIES)
    ]


def _encode(
    config: PrometheusRemoteWriteConfig,
    events: list[Any],
    received_ms: int,
    _attempt: int,
    *,
    totals: RunningTotals | None,
) -> list[WireRequest]:
    return remote_write_requests(events, config, received_ms=received_ms, totals=totals)


def _bind(
    _default: Encoder[PrometheusRemoteWriteConfig], _context: BuildContext
) -> Encoder[PrometheusRemoteWriteConfig]:
    return partial(_encode, totals=RunningTotals())


COMPONENT: Component[PrometheusRemoteWriteConfig] = outbound_component(
    type_="prometheus-remote-write",
    config_model=PrometheusRemoteWriteConfig,
    encode=partial(_encode, totals=None),
    urls=lambda config: [("/endpoint", config.endpoint)],
    describe="Metric events to a Prometheus remote write receiver (snappy protobuf), "
    "retried with backoff",
    bind=_bind,
)

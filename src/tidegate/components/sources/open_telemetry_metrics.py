"""The ``open-telemetry-metrics`` source: OTLP/HTTP metrics under the source's gateway
route.

``POST /gateway/{gateway_route_id}/v1/metrics`` with an ``ExportMetricsServiceRequest``,
protobuf or OTLP JSON (``components/sources/otlp.py``; ``Content-Encoding: gzip``
accepted); the answer is an empty ``ExportMetricsServiceResponse`` in the request's
encoding. Credential: an access key of the route (``Authorization: Token <key>``, an
exporter header). No options (the platform's Terraform provider sends an empty
``user_config``).

Each data point becomes one metric event, the shape ``event-to-metric`` emits and the
``prometheus-remote-write`` destination writes: ``{"name", "kind", "value": {"type",
"value"}, "tags": <the point's attributes>, "timestamp": <ms>}`` and, when set,
``start_timestamp``, ``unit``, ``description``, ``resources`` (the resource's
attributes), ``scope``:

* gauge: ``kind: absolute``, ``type: gauge``, the number;
* sum: ``type: counter`` when monotonic, else ``gauge``; ``kind: incremental`` for
  delta temporality, else ``absolute``;
* histogram: ``type: histogram``, ``{"count", "sum", "min", "max", "buckets":
  [{"upper_limit", "count"}]}`` (counts made cumulative, Prometheus's ``le``; the
  overflow bucket is ``count``), kind by temporality;
* exponential histogram: ``type: exponential_histogram``, ``{"count", "sum", "min",
  "max", "scale", "zero_count", "zero_threshold", "positive": {"offset",
  "bucket_counts"}, "negative": {...}}``;
* summary: ``kind: absolute``, ``type: summary``, ``{"count", "sum", "quantiles":
  [{"quantile", "value"}]}``.

**Decisions:** a number that is not finite (NaN, ±Inf) cannot travel in an event: a
gauge or sum point holding one is skipped, and such a ``sum``/``min``/``max`` is left
out of a histogram; exemplars and point flags are not carried.
"""

from __future__ import annotations

import math
from typing import Any, Final

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.metrics.v1.metrics_pb2 import AggregationTemporality
from pydantic import BaseModel, ConfigDict

from tidegate.components.base import BuildContext, Component, Needs, NodeRef
from tidegate.components.sources.otlp import (
    attributes,
    nanos_to_ms,
    parse_request,
    response,
    scope,
)
from tidegate.components.sources.push import Push, Received
from tidegate.errors import PayloadTooLarge
from tidegate.kit.body import MAX_EVENTS, checked_event

__all__ = ["COMPONENT", "PATHS", "OpenTelemetryMetricsConfig", "otlp_metric_events", "receive"]

METRICS_PATH: Final = "v1/metrics"
PATHS: Final = frozenset({METRICS_PATH})
_DELTA: Final = AggregationTemporality.AGGREGATION_TEMPORALITY_DELTA


def _finite(number: float) -> float | None:
    return number if math.isfinite(number) else None


def _kind(temporality: int) -> str:
    return "incremental" if temporality == _DELTA else "absolute"


def _number(point: Any) -> float | int | None:
    which = point.WhichOneof("value")
    if which == "as_int":
        return int(point.as_int)
    if which == "as_double":
        return _finite(point.as_double)
    return None


def _optional(point: Any, out: dict[str, Any], *names: str) -> None:
    for name in names:
        if point.HasField(name):
            number = _finite(getattr(point, name))
            if number is not None:
                out[name] = number


def _histogram(point: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"count": int(point.count)}
    _optional(point, out, "sum", "min", "max")
    buckets, running = [], 0
    for bound, count in zip(point.explicit_bounds, point.bucket_counts, strict=False):
        running += int(count)
        if math.isfinite(bound):
            buckets.append({"upper_limit": bound, "count": running})
    out["buckets"] = buckets
    return out


def _exponential(point: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "count": int(point.count),
        "scale": int(point.scale),
        "zero_count": int(point.zero_count),
    }
    _optional(point, out, "sum", "min", "max")
    if point.zero_threshold:
        out["zero_threshold"] = _finite(point.zero_threshold) or 0.0
    for side in ("positive", "negative"):
        buckets = getattr(point, side)
        if buckets.bucket_counts:
            out[side] = {
                "offset": int(buckets.offset),
                "bucket_counts": [int(count) for count in buckets.bucket_counts],
            }
    return out


def _summary(point: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"count": int(point.count)}
    total = _finite(point.sum)
    if total is not None:
        out["sum"] = total
    out["quantiles"] = [
        {"quantile": item.quantile, "value": item.value}
        for item in point.quantile_values
        if math.isfinite(item.quantile) and math.isfinite(item.value)
    ]
    return out


def _points(metric: Any) -> list[tuple[Any, str, str, Any]]:
    """``(point, kind, type, value)`` of each data point of ``metric`` (value None: the
    point is skipped)."""
    data = metric.WhichOneof("data")
    if data == "gauge":
        return [(p, "absolute", "gauge", _number(p)) for p in metric.gauge.data_points]
    if data == "sum":
        kind = _kind(metric.sum.aggregation_temporality)
        type_ = "counter" if metric.sum.is_monotonic else "gauge"
        return [(p, kind, type_, _number(p)) for p in metric.sum.data_points]
    if data == "histogram":
        kind = _kind(metric.histogram.aggregation_temporality)
        return [(p, kind, "histogram", _histogram(p)) for p in metric.histogram.data_points]
    if data == "exponential_histogram":
        found = metric.exponential_histogram
        kind = _kind(found.aggregation_temporality)
        return [(p, kind, "exponential_histogram", _exponential(p)) for p in found.data_points]
    if data == "summary":
        return [(p, "absolute", "summary", _summary(p)) for p in metric.summary.data_points]
    return []


def otlp_metric_events(
    body: bytes, *, content_type: str | None
) -> tuple[list[dict[str, Any]], bool]:
    """The events of an OTLP/HTTP metrics request (inflated), and whether it was JSON
    (CPU work: call from a worker thread)."""
    message, is_json = parse_request(ExportMetricsServiceRequest(), body, content_type)
    events: list[dict[str, Any]] = []
    for resource_metrics in message.resource_metrics:
        resources = attributes(resource_metrics.resource.attributes)
        for scope_metrics in resource_metrics.scope_metrics:
            scoped = scope(scope_metrics.scope)
            for metric in scope_metrics.metrics:
                for point, kind, type_, number in _points(metric):
                    if number is None:
                        continue
                    if len(events) >= MAX_EVENTS:
                        raise PayloadTooLarge(f"More than {MAX_EVENTS} data points in one request")
                    event: dict[str, Any] = {
                        "name": metric.name,
                        "kind": kind,
                        "value": {"type": type_, "value": number},
                        "tags": attributes(point.attributes),
                    }
                    if point.time_unix_nano:
                        event["timestamp"] = nanos_to_ms(point.time_unix_nano)
                    if point.start_time_unix_nano:
                        event["start_timestamp"] = nanos_to_ms(point.start_time_unix_nano)
                    if metric.unit:
                        event["unit"] = metric.unit
                    if metric.description:
                        event["description"] = metric.description
                    if resources:
                        event["resources"] = resources
                    if scoped:
                        event["scope"] = scoped
                    events.append(checked_event(event, f"Data point {len(events)}"))
    return events, is_json


class OpenTelemetryMetricsConfig(BaseModel):
    """No options."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def receive(_config: OpenTelemetryMetricsConfig, push: Push) -> Received:
    events, is_json = otlp_metric_events(push.body, content_type=push.content_type)
    answer, media = response(ExportMetricsServiceResponse(), is_json)
    return Received(events, answer=answer, media_type=media)


def _build(_config: OpenTelemetryMetricsConfig, _context: BuildContext, _node: NodeRef) -> None:
    return None


COMPONENT: Component[OpenTelemetryMetricsConfig] = Component(
    kind="source",
    type="open-telemetry-metrics",
    config_model=OpenTelemetryMetricsConfig,
    build=_build,
    describe="OTLP/HTTP metrics (protobuf or JSON) at `/v1/metrics` under the gateway "
    "route; each data point a metric event",
    needs=Needs(gateway_route=True),
    receive=receive,
    paths=PATHS,
)

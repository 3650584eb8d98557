"""Prometheus remote write 1.0, both ways: the ``WriteRequest`` protobuf (built at import
from its descriptor, no generated code), and the mapping between its time series and
tidegate's metric events.

A metric event is the shape ``event-to-metric`` and ``aggregate`` emit:
``{"name", "namespace"?, "kind": "absolute"|"incremental", "value": {"type", "value"},
"tags": {...}, "timestamp": <epoch ms>}``; ``type`` ``counter``, ``gauge`` or ``sum``
with a number, ``histogram`` with ``{"count", "sum", "buckets": [{"upper_limit",
"count"}]}`` (cumulative counts, Prometheus's ``le``), ``summary`` with ``{"count",
"sum", "quantiles": [{"quantile", "value"}]}``; ``exponential_histogram`` (the
OTLP metrics source's) is written as its ``_sum`` and ``_count`` only.

The wire (https://prometheus.io/docs/specs/remote_write_spec/): a ``POST`` whose body
is the snappy block of a ``WriteRequest``, ``Content-Type: application/x-protobuf``,
``Content-Encoding: snappy``, ``X-Prometheus-Remote-Write-Version: 0.1.0``; each series'
labels sorted by name, its samples in time order.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final

from google.protobuf.message import DecodeError  # type: ignore[import-untyped]

from tidegate.components.protobuf_shapes import F as _F
from tidegate.components.protobuf_shapes import message_classes
from tidegate.errors import BadRequest, PayloadTooLarge
from tidegate.kit.body import MAX_EVENTS, checked_event
from tidegate.processing.fields import string_form

__all__ = [
    "HEADERS",
    "WriteRequest",
    "full_name",
    "metric_series",
    "series_events",
    "write_request",
]

HEADERS: Final = (
    ("Content-Type", "application/x-protobuf"),
    ("Content-Encoding", "snappy"),
    ("X-Prometheus-Remote-Write-Version", "0.1.0"),
    ("User-Agent", "tidegate"),
)

_PACKAGE: Final = "tidegate.prometheus"


def _message_classes() -> dict[str, Any]:
    """``prometheus/prompb``'s ``WriteRequest``, ``TimeSeries``, ``Label``, ``Sample``
    and ``MetricMetadata`` (the fields remote write 1.0 uses; others are kept as unknown
    fields)."""
    shapes: dict[str, list[tuple[str, int, int, int, str]]] = {
        "WriteRequest": [
            ("timeseries", 1, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, "TimeSeries"),
            ("metadata", 3, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, "MetricMetadata"),
        ],
        "TimeSeries": [
            ("labels", 1, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, "Label"),
            ("samples", 2, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, "Sample"),
        ],
        "Label": [
            ("name", 1, _F.TYPE_STRING, _F.LABEL_OPTIONAL, ""),
            ("value", 2, _F.TYPE_STRING, _F.LABEL_OPTIONAL, ""),
        ],
        "Sample": [
            ("value", 1, _F.TYPE_DOUBLE, _F.LABEL_OPTIONAL, ""),
            ("timestamp", 2, _F.TYPE_INT64, _F.LABEL_OPTIONAL, ""),
        ],
        "MetricMetadata": [
            ("type", 1, _F.TYPE_INT32, _F.LABEL_OPTIONAL, ""),
            ("metric_family_name", 2, _F.TYPE_STRING, _F.LABEL_OPTIONAL, ""),
            ("help", 4, _F.TYPE_STRING, _F.LABEL_OPTIONAL, ""),
            ("unit", 5, _F.TYPE_STRING, _F.LABEL_OPTIONAL, ""),
        ],
    }
    return message_classes("tidegate/prometheus_remote_write.proto", _PACKAGE, shapes)


_CLASSES: Final = _message_classes()
WriteRequest: Final = _CLASSES["WriteRequest"]

# MetricMetadata.MetricType: COUNTER 1, GAUGE 2, HISTOGRAM 3, GAUGEHISTOGRAM 4,
# SUMMARY 5, INFO 6, STATESET 7.
_COUNTER_TYPES: Final = frozenset({1})
_NAME: Final = "__name__"
_INVALID_NAME: Final = re.compile(r"[^a-zA-Z0-9_:]")
_INVALID_LABEL: Final = re.compile(r"[^a-zA-Z0-9_]")


# Receiving ------------------------------------------------------------------------------


def series_events(body: bytes) -> list[dict[str, Any]]:
    """The metric events of a (snappy-inflated) ``WriteRequest``: one per sample,
    ``{"name", "kind": "absolute", "value": {"type": "gauge"|"counter", "value"},
    "tags", "timestamp"}`` (``counter`` when the request's metadata says so). Samples
    that are not finite (NaN, which includes Prometheus's staleness marker, and ±Inf)
    are skipped: an event carries only finite numbers (CPU work: worker thread)."""
    request = WriteRequest()
    try:
        request.ParseFromString(body)
    except (DecodeError, RecursionError) as error:
        raise BadRequest(f"Body is not a Prometheus remote write WriteRequest: {error}") from None
    counters = {item.metric_family_name for item in request.metadata if item.type in _COUNTER_TYPES}
    events: list[dict[str, Any]] = []
    for number, series in enumerate(request.timeseries):
        labels = {label.name: label.value for label in series.labels}
        name = labels.pop(_NAME, "")
        if not name:
            raise BadRequest(f"Time series {number} has no __name__ label")
        type_ = "counter" if name in counters else "gauge"
        for sample in series.samples:
            if not math.isfinite(sample.value):
                continue
            if len(events) >= MAX_EVENTS:
                raise PayloadTooLarge(f"More than {MAX_EVENTS} samples in one request")
            event = {
                "name": name,
                "kind": "absolute",
                "value": {"type": type_, "value": sample.value},
                "tags": dict(labels),
                "timestamp": sample.timestamp,
            }
            events.append(checked_event(event, f"Time series {number}"))
    return events


# Sending --------------------------------------------------------------------------------

Labels = tuple[tuple[str, str], ...]


def full_name(event: Mapping[str, Any], separator: str) -> str | None:
    """A metric event's ``<namespace><separator><name>`` (or ``name``); None without a
    name."""
    name = event.get("name")
    if not isinstance(name, str) or not name:
        return None
    namespace = event.get("namespace")
    return f"{namespace}{separator}{name}" if isinstance(namespace, str) and namespace else name


def _metric_name(event: Mapping[str, Any]) -> str | None:
    name = full_name(event, "_")
    if name is None:
        return None
    name = _INVALID_NAME.sub("_", name)
    return f"_{name}" if name[0].isdigit() else name


def _labels(tags: Any, extra: Iterable[tuple[str, str]] = ()) -> dict[str, str]:
    labels: dict[str, str] = {}
    if isinstance(tags, Mapping):
        for key, value in tags.items():
            if value is None:
                continue
            name = _INVALID_LABEL.sub("_", str(key)) or "_"
            if name[0].isdigit():
                name = f"_{name}"
            if name.startswith("__"):
                continue  # reserved for Prometheus
            labels[name] = string_form(value)
    labels.update(extra)
    return labels


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _le(value: Any) -> str | None:
    number = _number(value)
    if number is None:
        return None
    return repr(number) if not number.is_integer() else f"{number:.1f}"


def metric_series(event: Any) -> Iterator[tuple[str, dict[str, str], float]]:
    """``(metric name, labels, value)`` of each series a metric event makes; nothing for
    an event that is not a metric."""
    if not isinstance(event, Mapping):
        return
    name = _metric_name(event)
    value = event.get("value")
    if name is None or not isinstance(value, Mapping):
        return
    type_ = value.get("type")
    inner = value.get("value")
    labels = _labels(event.get("tags"))
    if type_ in ("counter", "gauge", "sum"):
        number = _number(inner)
        if number is not None:
            yield name, labels, number
        return
    if type_ not in ("histogram", "summary", "exponential_histogram"):
        return
    if not isinstance(inner, Mapping):
        return
    for part in ("sum", "count"):
        number = _number(inner.get(part))
        if number is not None:
            yield f"{name}_{part}", labels, number
    if type_ == "histogram":
        for bucket in inner.get("buckets") or ():
            if not isinstance(bucket, Mapping):
                continue
            le, count = _le(bucket.get("upper_limit")), _number(bucket.get("count"))
            if le is not None and count is not None:
                yield f"{name}_bucket", {**labels, "le": le}, count
        count = _number(inner.get("count"))
        if count is not None:
            yield f"{name}_bucket", {**labels, "le": "+Inf"}, count
        return
    if type_ == "exponential_histogram":
        return  # its buckets have no classic ``le`` form: sum and count only
    for quantile in inner.get("quantiles") or ():
        if not isinstance(quantile, Mapping):
            continue
        q, number = _number(quantile.get("quantile")), _number(quantile.get("value"))
        if q is not None and number is not None:
            yield name, {**labels, "quantile": repr(q)}, number


def series_key(name: str, labels: Mapping[str, str]) -> Labels:
    """The series' labels, ``__name__`` included, sorted by name (as the spec asks)."""
    return tuple(sorted({**labels, _NAME: name}.items()))


def write_request(series: Mapping[Labels, list[tuple[int, float]]]) -> bytes:
    """The serialized ``WriteRequest`` of ``series`` (each one's samples put in time
    order)."""
    request = WriteRequest()
    for labels, samples in series.items():
        added = request.timeseries.add()
        for name, value in labels:
            added.labels.add(name=name, value=value)
        for timestamp, number in sorted(samples, key=lambda sample: sample[0]):
            added.samples.add(value=number, timestamp=timestamp)
    return bytes(request.SerializeToString())

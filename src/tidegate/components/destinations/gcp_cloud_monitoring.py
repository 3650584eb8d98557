"""The ``gcp-cloud-monitoring`` destination: metric events as custom metrics in Google
Cloud Monitoring, as the platform's Terraform provider configures it
(``internal/provider/models/destinations/gcp_cloud_monitoring.go``): ``project_id``,
``resource_type``, ``resource_labels`` (a list of ``{label_name, label_value}``),
``credentials_json`` (a service account key: ``gcp.py``), ``ack_enabled``.

The wire (https://cloud.google.com/monitoring/api/ref_v3/rest/v3/projects.timeSeries/create):
``POST https://monitoring.googleapis.com/v3/projects/<project_id>/timeSeries``,
``Authorization: Bearer <token>`` (scope ``https://www.googleapis.com/auth/
monitoring.write``), ``Content-Type: application/json``, ``{"timeSeries": [{"metric":
{"type", "labels"}, "resource": {"type", "labels"}, "metricKind", "valueType":
"DOUBLE", "points": [{"interval": {"startTime"?, "endTime"}, "value": {"doubleValue"}}]}]}``,
at most 200 time series per request, each with one point (the API's rules); Monitoring
answers 200 ``{}``.

From metric events (``components/prometheus_wire.py``'s shape): the metric type is
``custom.googleapis.com/<namespace>/<name>`` (or ``.../<name>``; characters other than
letters, digits, ``_``, ``.`` and ``/`` made ``_``); tags are its labels (keys made
``[A-Za-z][A-Za-z0-9_]*``, values text); the point's end time is the event's
``timestamp``, else the time the request was received. A gauge is a ``GAUGE``; a
counter or sum ``CUMULATIVE`` (custom metrics take no ``DELTA``): an absolute one with
its value, an incremental one with a running total kept per node and worker (as the
``prometheus-remote-write`` destination keeps it: ``RunningTotals``), its start time the
event's ``start_timestamp``, else the time the node was built. A histogram, summary or
exponential histogram becomes ``<type>_count`` and ``<type>_sum`` series of its kind (no
``DISTRIBUTION`` values). **Decisions:** Monitoring takes one point per time series per
request and refuses points of a series closer than its sampling period (5 s), so within
one delivery a series keeps only its last point (for a cumulative one the total, which
includes the earlier ones); events that are not metric events and values that are not
finite are skipped (counted in the log). Retries, backoff, the destination guard and
``ack_enabled`` as the other outbound destinations; ``TIDEGATE_DESTINATION_ENDPOINTS``
(``gcp-cloud-monitoring=...``) sends elsewhere.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from typing import Any, Final

import orjson
from pydantic import BaseModel, ConfigDict

from tidegate.clock import now_ms
from tidegate.components.base import BuildContext, Component
from tidegate.components.destinations.gcp import (
    Credentials,
    ProjectId,
    ResourceLabels,
    ResourceType,
    authorizer,
    monitored_resource,
    token_urls,
)
from tidegate.components.destinations.outbound import Encoder, outbound_component
from tidegate.components.destinations.prometheus_remote_write import RunningTotals
from tidegate.components.destinations.vendor import json_arrays
from tidegate.components.destinations.wire import WireRequest
from tidegate.components.prometheus_wire import full_name
from tidegate.logs.timestamps import epoch_ms, rfc3339_ms
from tidegate.processing.fields import string_form

__all__ = ["COMPONENT", "SCOPE", "GcpCloudMonitoringConfig", "monitoring_requests"]

log = logging.getLogger("tidegate.runtime.http")

TYPE: Final = "gcp-cloud-monitoring"
SCOPE: Final = "https://www.googleapis.com/auth/monitoring.write"
API: Final = "https://monitoring.googleapis.com"
MAX_SERIES: Final = 200
_PREFIX: Final = "custom.googleapis.com/"
_INVALID_TYPE: Final = re.compile(r"[^A-Za-z0-9_./]")
_INVALID_LABEL: Final = re.compile(r"[^A-Za-z0-9_]")
_MAX_LABEL_VALUE: Final = 1024


class GcpCloudMonitoringConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    ack_enabled: bool = True
    credentials_json: Credentials
    project_id: ProjectId
    resource_type: ResourceType
    resource_labels: ResourceLabels | None = None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _metric_type(event: Mapping[str, Any]) -> str | None:
    path = full_name(event, "/")
    return None if path is None else _PREFIX + _INVALID_TYPE.sub("_", path)


def _labels(tags: Any) -> dict[str, str]:
    labels: dict[str, str] = {}
    for key, value in tags.items() if isinstance(tags, Mapping) else ():
        if value is None:
            continue
        name = _INVALID_LABEL.sub("_", str(key))[:100]
        if not name[:1].isalpha() or not name[:1].isascii():
            name = f"t_{name}"[:100]
        labels[name] = string_form(value)[:_MAX_LABEL_VALUE]
    return labels


Key = tuple[str, tuple[tuple[str, str], ...]]


def _points(event: Any) -> Iterator[tuple[str, bool, float]]:
    """``(metric type, cumulative, value)`` of each series a metric event makes."""
    if not isinstance(event, Mapping):
        return
    metric, value = _metric_type(event), event.get("value")
    if metric is None or not isinstance(value, Mapping):
        return
    type_, inner = value.get("type"), value.get("value")
    number = _number(inner)
    if type_ == "gauge" and number is not None:
        yield metric, False, number
    elif type_ in ("counter", "sum") and number is not None:
        yield metric, True, number
    elif type_ in ("histogram", "summary", "exponential_histogram") and isinstance(inner, Mapping):
        for part in ("count", "sum"):
            number = _number(inner.get(part))
            if number is not None:
                yield f"{metric}_{part}", True, number


def _time_series(
    events: Sequence[Any], received_ms: int, started_ms: int, totals: RunningTotals | None
) -> Iterator[dict[str, Any]]:
    latest: dict[Key, dict[str, Any]] = {}
    skipped = 0
    for event in events:
        made = False
        for metric, cumulative, number in _points(event):
            made = True
            labels = _labels(event.get("tags"))
            key: Key = (metric, tuple(sorted(labels.items())))
            end = epoch_ms(event.get("timestamp")) or received_ms
            value = number
            interval = {"endTime": rfc3339_ms(end)}
            if cumulative:
                if totals is not None and event.get("kind") == "incremental":
                    value = totals.add((("", metric), *key[1]), number)
                start = epoch_ms(event.get("start_timestamp")) or started_ms
                interval = {"startTime": rfc3339_ms(min(start, end - 1)), **interval}
            latest.pop(key, None)  # the last point of a series, in delivery order
            latest[key] = {
                "metric": {"type": metric, "labels": labels},
                "metricKind": "CUMULATIVE" if cumulative else "GAUGE",
                "valueType": "DOUBLE",
                "points": [{"interval": interval, "value": {"doubleValue": value}}],
            }
        skipped += not made
    if skipped:
        log.info("gcp-cloud-monitoring: %s events that are not metrics skipped", skipped)
    yield from latest.values()


def monitoring_requests(
    events: Sequence[Any],
    config: GcpCloudMonitoringConfig,
    *,
    received_ms: int,
    base: str,
    started_ms: int = 0,
    totals: RunningTotals | None = None,
) -> list[WireRequest]:
    """The requests carrying ``events``' time series (CPU work: may run in a worker
    thread); the token is added per delivery. Without ``totals``, incremental values are
    sent as they are."""
    resource = monitored_resource(config.resource_type, config.resource_labels)
    items = (
        orjson.dumps({**series, "resource": resource})
        for series in _time_series(events, received_ms, started_ms, totals)
    )
    url = f"{base}/v3/projects/{config.project_id}/timeSeries"
    headers = (("Content-Type", "application/json"),)
    return [
        WireRequest("POST", url, headers, b'{"timeSeries":' + array + b"}")
        for array in json_arrays(items, max_bytes=10_000_000, max_items=MAX_SERIES)
    ]


def _encode(
    config: GcpCloudMonitoringConfig,
    events: list[Any],
    received_ms: int,
    _attempt: int,
    *,
    base: str | None,
    started_ms: int,
    totals: RunningTotals | None,
) -> list[WireRequest]:
    return monitoring_requests(
        events,
        config,
        received_ms=received_ms,
        base=base or API,
        started_ms=started_ms,
        totals=totals,
    )


def _bind(
    _default: Encoder[GcpCloudMonitoringConfig], context: BuildContext
) -> Encoder[GcpCloudMonitoringConfig]:
    """Per node: the operator's endpoint, the time it was built, its running totals."""
    return partial(
        _encode, base=context.endpoints.get(TYPE), started_ms=now_ms(), totals=RunningTotals()
    )


COMPONENT: Component[GcpCloudMonitoringConfig] = outbound_component(
    type_=TYPE,
    config_model=GcpCloudMonitoringConfig,
    encode=partial(_encode, base=None, started_ms=0, totals=None),
    urls=lambda config: token_urls(config.credentials_json),
    describe="Metric events as custom metrics in Google Cloud Monitoring "
    "(`timeSeries.create`), with a service account's token",
    bind=_bind,
    authorizer=authorizer(SCOPE),
)

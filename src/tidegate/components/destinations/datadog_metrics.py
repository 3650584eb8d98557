"""The ``datadog-metrics`` destination: metric events to Datadog's Metrics API, as the
platform's Terraform provider configures it (``internal/provider/models/destinations/
datadog_metrics.go``): ``api_key``, ``site`` (``us1``, ``us3``, ``us5``, ``eu1``; also
``ap1``, as ``datadog-logs``), ``ack_enabled``.

The wire (https://docs.datadoghq.com/api/latest/metrics/#submit-metrics): ``POST
https://api.<site's domain>/api/v2/series``, ``DD-API-KEY: <api_key>``, ``Content-Type:
application/json``, gzip (``Content-Encoding: gzip``), ``{"series": [{"metric", "type",
"points": [{"timestamp": <s>, "value"}], "tags": ["key:value"], "resources": [{"name",
"type": "host"}], "interval"?}]}``, at most 512,000 bytes before compression per request
(the API's limit on a payload, so the decompressed limit of 5 MiB holds too); Datadog
answers 202 ``{"errors": []}``.

From metric events (``components/prometheus_wire.py``'s shape): the metric is
``<namespace>.<name>`` (or ``name``); ``tags`` ``{key: value}`` become ``key:value``
(an empty value: ``key``), a ``host`` tag becomes the series' host resource; a point's
time is the event's ``timestamp`` (seconds), else the time the request was received. An
``incremental`` counter or sum is a ``count`` (type 1) with its ``interval_ms`` as
``interval`` (seconds) when given; a gauge, and an ``absolute`` counter or sum (a
running total: Datadog's counts are deltas), a ``gauge`` (type 3). A histogram, summary
or exponential histogram becomes ``<metric>.count`` and ``<metric>.sum`` (counts when
incremental, else gauges) and ``.min``/``.max`` gauges when given (no sketches:
distributions are not sent). Events that are not metric events, and values that are not
finite, are skipped (counted in the log). Retries, backoff, the destination guard and
``ack_enabled`` as the other outbound destinations; ``TIDEGATE_DESTINATION_ENDPOINTS``
(``datadog-metrics=...``) sends elsewhere.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Annotated, Any, Final, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, model_validator

from tidegate.components.base import Component
from tidegate.components.destinations.datadog_logs import SITES
from tidegate.components.destinations.vendor import json_arrays, vendor_component
from tidegate.components.destinations.wire import WireRequest, check_header, compress
from tidegate.components.prometheus_wire import full_name
from tidegate.logs.timestamps import epoch_ms
from tidegate.processing.fields import string_form

__all__ = ["COMPONENT", "DatadogMetricsConfig", "datadog_metric_requests", "series_of"]

log = logging.getLogger("tidegate.runtime.http")

MAX_BYTES: Final = 512_000
MAX_ITEMS: Final = 100_000
PATH: Final = "/api/v2/series"
COUNT: Final = 1
GAUGE: Final = 3
_BEFORE: Final = b'{"series":'
_AFTER: Final = b"}"


class DatadogMetricsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    api_key: Annotated[str, Field(min_length=1, max_length=256)]
    site: Literal["us1", "us3", "us5", "eu1", "ap1"]
    ack_enabled: bool = True

    @model_validator(mode="after")
    def _key_fits_a_header(self) -> DatadogMetricsConfig:
        check_header("DD-API-KEY", self.api_key)
        return self


def _number(value: Any) -> float | int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if math.isfinite(value) else None


def _tags(tags: Any) -> tuple[list[str], str | None]:
    """``key:value`` tags, and the host tag's value (made a resource)."""
    out: list[str] = []
    host = None
    for key, value in tags.items() if isinstance(tags, Mapping) else ():
        if value is None:
            continue
        text = string_form(value)
        if key == "host" and text:
            host = text
            continue
        out.append(f"{key}:{text}" if text else str(key))
    return out, host


def series_of(event: Any, received_ms: int) -> Iterator[dict[str, Any]]:
    """The v2 series of one metric event; nothing for an event that is not one."""
    if not isinstance(event, Mapping):
        return
    name, value = full_name(event, "."), event.get("value")
    if name is None or not isinstance(value, Mapping):
        return
    millis = epoch_ms(event.get("timestamp")) or received_ms
    tags, host = _tags(event.get("tags"))
    incremental = event.get("kind") == "incremental"
    interval_ms = event.get("interval_ms")
    interval = (
        max(1, interval_ms // 1000)
        if isinstance(interval_ms, int) and not isinstance(interval_ms, bool) and interval_ms > 0
        else None
    )

    def one(metric: str, number: Any, counted: bool) -> dict[str, Any] | None:
        point = _number(number)
        if point is None:
            return None
        series: dict[str, Any] = {
            "metric": metric,
            "type": COUNT if counted else GAUGE,
            "points": [{"timestamp": millis // 1000, "value": point}],
        }
        if tags:
            series["tags"] = tags
        if host is not None:
            series["resources"] = [{"name": host, "type": "host"}]
        if counted and interval is not None:
            series["interval"] = interval
        return series

    type_, inner = value.get("type"), value.get("value")
    made: list[dict[str, Any] | None] = []
    if type_ in ("counter", "sum"):
        made.append(one(name, inner, incremental))
    elif type_ == "gauge":
        made.append(one(name, inner, False))
    elif type_ in ("histogram", "summary", "exponential_histogram") and isinstance(inner, Mapping):
        made.append(one(f"{name}.count", inner.get("count"), incremental))
        made.append(one(f"{name}.sum", inner.get("sum"), incremental))
        for part in ("min", "max"):
            if part in inner:
                made.append(one(f"{name}.{part}", inner.get(part), False))
    for series in made:
        if series is not None:
            yield series


def _items(events: Sequence[Any], received_ms: int) -> Iterator[bytes]:
    skipped = 0
    for event in events:
        made = False
        for series in series_of(event, received_ms):
            made = True
            yield orjson.dumps(series)
        skipped += not made
    if skipped:
        log.info("datadog-metrics: %s events that are not metrics skipped", skipped)


def datadog_metric_requests(
    events: Sequence[Any], config: DatadogMetricsConfig, *, received_ms: int, base: str
) -> list[WireRequest]:
    """The requests carrying ``events`` (CPU work: may run in a worker thread)."""
    headers = (("Content-Type", "application/json"), ("DD-API-KEY", config.api_key))
    room = MAX_BYTES - len(_BEFORE) - len(_AFTER)
    requests = []
    for array in json_arrays(_items(events, received_ms), max_bytes=room, max_items=MAX_ITEMS):
        sent, extra = compress(_BEFORE + array + _AFTER, "gzip")
        requests.append(WireRequest("POST", base + PATH, (*headers, *extra), sent))
    return requests


def _encode(
    config: DatadogMetricsConfig, events: list[Any], received_ms: int, base: str
) -> list[WireRequest]:
    return datadog_metric_requests(events, config, received_ms=received_ms, base=base)


COMPONENT: Component[DatadogMetricsConfig] = vendor_component(
    type_="datadog-metrics",
    config_model=DatadogMetricsConfig,
    encode=_encode,
    base_url=lambda config: f"https://api.{SITES[config.site]}",
    describe="Metric events to Datadog's Metrics API (`/api/v2/series`), gzip, retried "
    "with backoff",
)

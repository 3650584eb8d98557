"""The ``mezmo-datadog-source`` source: what a Datadog Agent sends, under the source's
gateway route (the platform's Terraform provider: ``mezmo_datadog_source``, "logs and
metrics data directly from an installed datadog agent", an empty ``user_config``).

Paths (``POST``) under ``/gateway/{gateway_route_id}``, Datadog's intake paths:

* ``/api/v2/logs``: the Agent's HTTP logs, a JSON array of ``{"message", "status",
  "timestamp" (epoch ms), "hostname", "service", "ddsource", "ddtags"}``
  (``pkg/logs/processor/json.go`` of the Agent). Each object is one event, as sent.
* ``/api/v2/series``: metrics, the Agent's ``MetricPayload`` protobuf
  (``Content-Type: application/x-protobuf``; ``agent-payload``'s
  ``proto/metrics/agent_payload.proto``), or the public API's JSON ``{"series":
  [{"metric", "type", "points": [{"timestamp", "value"}], "tags", "resources",
  "interval", "unit"}]}``.
* ``/api/v1/series``: metrics as the older Agents and the v1 API send them, JSON
  ``{"series": [{"metric", "type": "gauge"|"count"|"rate", "points": [[<s>, <value>]],
  "tags", "host", "interval", "source_type_name"}]}``.

Bodies come as the Agent compresses them (``Content-Encoding: gzip``, ``deflate`` or
``zstd``: the gateway inflates them). Credential: the Agent's ``DD-API-KEY`` header
(its ``api_key`` set to an access key of the route; the gateway reads it like
``apiKey``). The answers are the intake's: ``{}`` for logs, ``{"status":"ok"}`` for
v1 series, ``{"errors":[]}`` for v2 series.

Each point of a series becomes one metric event (the shape of
``components/prometheus_wire.py``): ``{"name": <metric>, "kind", "value": {"type",
"value"}, "tags", "timestamp": <ms>}`` and, when set, ``interval_ms``, ``unit``,
``source_type_name``. A gauge (and an unspecified type) is ``absolute`` ``gauge``; a
count ``incremental`` ``counter``; a rate (a per-second value over the interval) an
``incremental`` ``counter`` of the value times the interval (as Vector's
``datadog_agent`` source reads it). Tags ``key:value`` become ``{key: value}`` (a tag
without ``:`` has the value ``""``; a key given twice keeps its last value); the host
(v1's ``host``, v2's resource of type ``host``) and other resources become tags of
their type when the series has no such tag. Points whose value is not finite are
skipped. At most ``MAX_EVENTS`` events per request.

Not served: sketches (``/api/beta/sketches``, distributions), the Agent's metadata,
check runs, events and ``/api/v1/validate`` (a ``GET``): those requests are 404s, which
the Agent logs and drops.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, Final

import orjson
from google.protobuf.message import DecodeError  # type: ignore[import-untyped]
from pydantic import BaseModel, ConfigDict

from tidegate.components.base import BuildContext, Component, Needs, NodeRef
from tidegate.components.protobuf_shapes import F, message_classes
from tidegate.components.sources.push import Push, Received
from tidegate.errors import BadRequest, PayloadTooLarge
from tidegate.kit.body import MAX_EVENTS, checked_event, events_of, media_type

__all__ = [
    "COMPONENT",
    "LOGS",
    "PATHS",
    "SERIES_V1",
    "SERIES_V2",
    "DatadogAgentConfig",
    "MetricPayload",
    "receive",
    "series_v1_events",
    "series_v2_events",
]

LOGS: Final = "api/v2/logs"
SERIES_V1: Final = "api/v1/series"
SERIES_V2: Final = "api/v2/series"
PATHS: Final = frozenset({LOGS, SERIES_V1, SERIES_V2})
_ANSWERS: Final = {LOGS: b"{}", SERIES_V1: b'{"status":"ok"}', SERIES_V2: b'{"errors":[]}'}
_PROTOBUF: Final = frozenset({"application/x-protobuf", "application/protobuf"})

# MetricPayload.MetricType: UNSPECIFIED 0, COUNT 1, RATE 2, GAUGE 3 (v2); v1 names them.
_V2_TYPES: Final = {0: "gauge", 1: "count", 2: "rate", 3: "gauge"}
_V1_TYPES: Final = frozenset({"gauge", "count", "rate"})

MetricPayload: Final = message_classes(
    "tidegate/datadog_agent_payload.proto",
    "tidegate.datadog",
    {
        "MetricPayload": [("series", 1, F.TYPE_MESSAGE, F.LABEL_REPEATED, "MetricSeries")],
        "MetricSeries": [
            ("resources", 1, F.TYPE_MESSAGE, F.LABEL_REPEATED, "Resource"),
            ("metric", 2, F.TYPE_STRING, F.LABEL_OPTIONAL, ""),
            ("tags", 3, F.TYPE_STRING, F.LABEL_REPEATED, ""),
            ("points", 4, F.TYPE_MESSAGE, F.LABEL_REPEATED, "MetricPoint"),
            ("type", 5, F.TYPE_INT32, F.LABEL_OPTIONAL, ""),
            ("unit", 6, F.TYPE_STRING, F.LABEL_OPTIONAL, ""),
            ("source_type_name", 7, F.TYPE_STRING, F.LABEL_OPTIONAL, ""),
            ("interval", 8, F.TYPE_INT64, F.LABEL_OPTIONAL, ""),
        ],
        "MetricPoint": [
            ("value", 1, F.TYPE_DOUBLE, F.LABEL_OPTIONAL, ""),
            ("timestamp", 2, F.TYPE_INT64, F.LABEL_OPTIONAL, ""),
        ],
        "Resource": [
            ("type", 1, F.TYPE_STRING, F.LABEL_OPTIONAL, ""),
            ("name", 2, F.TYPE_STRING, F.LABEL_OPTIONAL, ""),
        ],
    },
)["MetricPayload"]


class DatadogAgentConfig(BaseModel):
    """No options."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def _tags(tags: Any, resources: list[tuple[str, str]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for tag in tags if isinstance(tags, list) else ():
        if isinstance(tag, str) and tag:
            key, _, value = tag.partition(":")
            out[key] = value
    for type_, name in resources:
        if type_ and name and type_ not in out:
            out[type_] = name
    return out


def _number(value: Any) -> float | int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if math.isfinite(value) else None


class _Series:
    """One series' fields, read from any of the three forms."""

    __slots__ = ("interval", "metric", "source", "tags", "type", "unit")

    def __init__(
        self,
        *,
        metric: str,
        type_: str,
        tags: dict[str, str],
        interval: int,
        unit: str = "",
        source: str = "",
    ) -> None:
        self.metric, self.type, self.tags = metric, type_, tags
        self.interval, self.unit, self.source = interval, unit, source

    def event(self, seconds: Any, value: Any, where: str) -> dict[str, Any] | None:
        number, moment = _number(value), _number(seconds)
        if number is None or moment is None:
            return None
        kind, type_ = "absolute", "gauge"
        if self.type == "count":
            kind, type_ = "incremental", "counter"
        elif self.type == "rate":
            kind, type_ = "incremental", "counter"
            number = number * (self.interval or 1)
        event: dict[str, Any] = {
            "name": self.metric,
            "kind": kind,
            "value": {"type": type_, "value": number},
            "tags": dict(self.tags),
            "timestamp": int(moment * 1000),
        }
        if self.interval > 0:
            event["interval_ms"] = self.interval * 1000
        if self.unit:
            event["unit"] = self.unit
        if self.source:
            event["source_type_name"] = self.source
        return checked_event(event, where, check_strings=True)


def _collect(points: Iterator[tuple[_Series, Any, Any, str]]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for series, seconds, value, where in points:
        event = series.event(seconds, value, where)
        if event is None:
            continue
        if len(events) >= MAX_EVENTS:
            raise PayloadTooLarge(f"More than {MAX_EVENTS} points in one request")
        events.append(event)
    return events


def _document_series(body: bytes) -> list[Any]:
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise BadRequest(f"The body is not valid JSON: {error}") from None
    series = document.get("series") if isinstance(document, dict) else None
    if not isinstance(series, list):
        raise BadRequest('The body must be {"series": [...]}')
    return series


def _interval(value: Any) -> int:
    number = _number(value)
    return int(number) if number is not None and number > 0 else 0


def series_v1_events(body: bytes) -> list[dict[str, Any]]:
    """The metric events of a v1 series body (CPU work: worker thread)."""

    def points() -> Iterator[tuple[_Series, Any, Any, str]]:
        for number, item in enumerate(_document_series(body)):
            where = f"Series {number}"
            if not isinstance(item, dict) or not isinstance(item.get("metric"), str):
                raise BadRequest(f'{where} must be an object with a "metric"')
            given = item.get("type")
            type_ = given if isinstance(given, str) and given in _V1_TYPES else "gauge"
            host = item.get("host")
            resources = [("host", host)] if isinstance(host, str) else []
            source = item.get("source_type_name")
            series = _Series(
                metric=item["metric"],
                type_=type_,
                tags=_tags(item.get("tags"), resources),
                interval=_interval(item.get("interval")),
                source=source if isinstance(source, str) else "",
            )
            for point in item.get("points") or ():
                if not isinstance(point, list) or len(point) != 2:
                    raise BadRequest(f"{where}: each point must be [<timestamp>, <value>]")
                yield series, point[0], point[1], where

    return _collect(points())


def _json_v2_points(body: bytes) -> Iterator[tuple[_Series, Any, Any, str]]:
    for number, item in enumerate(_document_series(body)):
        where = f"Series {number}"
        if not isinstance(item, dict) or not isinstance(item.get("metric"), str):
            raise BadRequest(f'{where} must be an object with a "metric"')
        type_ = item.get("type", 0)
        resources = [
            (str(resource.get("type", "")), str(resource.get("name", "")))
            for resource in item.get("resources") or ()
            if isinstance(resource, dict)
        ]
        unit = item.get("unit")
        series = _Series(
            metric=item["metric"],
            type_=_V2_TYPES.get(type_, "gauge") if isinstance(type_, int) else "gauge",
            tags=_tags(item.get("tags"), resources),
            interval=_interval(item.get("interval")),
            unit=unit if isinstance(unit, str) else "",
        )
        for point in item.get("points") or ():
            if not isinstance(point, dict):
                raise BadRequest(f"{where}: each point must be {{timestamp, value}}")
            yield series, point.get("timestamp"), point.get("value"), where


def _protobuf_v2_points(body: bytes) -> Iterator[tuple[_Series, Any, Any, str]]:
    payload = MetricPayload()
    try:
        payload.ParseFromString(body)
    except (DecodeError, RecursionError) as error:
        raise BadRequest(f"Body is not a Datadog MetricPayload: {error}") from None
    for number, item in enumerate(payload.series):
        resources = [(resource.type, resource.name) for resource in item.resources]
        series = _Series(
            metric=item.metric,
            type_=_V2_TYPES.get(item.type, "gauge"),
            tags=_tags(list(item.tags), resources),
            interval=max(0, item.interval),
            unit=item.unit,
            source=item.source_type_name,
        )
        if not item.metric:
            raise BadRequest(f"Series {number} has no metric name")
        for point in item.points:
            yield series, point.timestamp, point.value, f"Series {number}"


def series_v2_events(body: bytes, content_type: str | None) -> list[dict[str, Any]]:
    """The metric events of a v2 series body, protobuf or JSON (CPU work)."""
    if media_type(content_type) in _PROTOBUF:
        return _collect(_protobuf_v2_points(body))
    return _collect(_json_v2_points(body))


def receive(_config: DatadogAgentConfig, push: Push) -> Received:
    if push.path == LOGS:
        events = events_of(push.body, content_type=push.content_type)
    elif push.path == SERIES_V1:
        events = series_v1_events(push.body)
    else:
        events = series_v2_events(push.body, push.content_type)
    return Received(events, answer=_ANSWERS[push.path], media_type="application/json")


def _build(_config: DatadogAgentConfig, _context: BuildContext, _node: NodeRef) -> None:
    return None


COMPONENT: Component[DatadogAgentConfig] = Component(
    kind="source",
    type="mezmo-datadog-source",
    config_model=DatadogAgentConfig,
    build=_build,
    describe="What a Datadog Agent sends (`DD-API-KEY: <access key>`): logs at "
    "`/api/v2/logs`, metrics at `/api/v1/series` and `/api/v2/series` (protobuf or JSON)",
    needs=Needs(gateway_route=True),
    receive=receive,
    paths=PATHS,
)

"""The ``open-telemetry-traces`` source: OTLP/HTTP traces under the source's gateway
route.

``POST /gateway/{gateway_route_id}/v1/traces`` with an ``ExportTraceServiceRequest``,
protobuf or OTLP JSON (``components/sources/otlp.py``; ``Content-Encoding: gzip``
accepted); the answer is an empty ``ExportTraceServiceResponse`` in the request's
encoding. Credential: an access key of the route (``Authorization: Token <key>``). No
options (the platform's Terraform provider sends an empty ``user_config``).

Each span becomes one event, with the field names the ``trace-sampling`` processor
reads by default (``trace_id``, ``parent_span_id``):

* ``trace_id``, ``span_id``, ``parent_span_id`` (hex; a root span has none),
  ``trace_state``, ``name``, ``kind`` (``internal``, ``server``, ``client``,
  ``producer``, ``consumer``; ``unspecified``);
* ``timestamp`` (the start, epoch ms), ``end_timestamp`` (ms),
  ``start_time_unix_nano``, ``end_time_unix_nano``, ``duration_ms`` (float);
* ``attributes``, ``resources`` (the resource's attributes), ``scope``;
* ``status``: ``{"code": "unset"|"ok"|"error", "message"?}``;
* ``events``: ``[{"name", "timestamp" (ms), "attributes"?}]``, ``links``:
  ``[{"trace_id", "span_id", "trace_state"?, "attributes"?}]``, ``flags``, and the
  ``dropped_*_count`` fields, when set.
"""

from __future__ import annotations

from typing import Any, Final

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status
from pydantic import BaseModel, ConfigDict

from tidegate.components.base import BuildContext, Component, Needs, NodeRef
from tidegate.components.sources.otlp import (
    attributes,
    hex_id,
    nanos_to_ms,
    parse_request,
    response,
    scope,
)
from tidegate.components.sources.push import Push, Received
from tidegate.errors import PayloadTooLarge
from tidegate.kit.body import MAX_EVENTS, checked_event

__all__ = ["COMPONENT", "PATHS", "OpenTelemetryTracesConfig", "otlp_span_events", "receive"]

TRACES_PATH: Final = "v1/traces"
PATHS: Final = frozenset({TRACES_PATH})


def _enum_name(enum: Any, number: int, prefix: str) -> str:
    try:
        return str(enum.Name(number)).removeprefix(prefix).lower()
    except ValueError:
        return str(number)


def _span(span: Any) -> dict[str, Any]:
    event: dict[str, Any] = {"trace_id": hex_id(span.trace_id), "span_id": hex_id(span.span_id)}
    if span.parent_span_id:
        event["parent_span_id"] = hex_id(span.parent_span_id)
    if span.trace_state:
        event["trace_state"] = span.trace_state
    event["name"] = span.name
    event["kind"] = _enum_name(Span.SpanKind, span.kind, "SPAN_KIND_")
    if span.start_time_unix_nano:
        event["timestamp"] = nanos_to_ms(span.start_time_unix_nano)
        event["start_time_unix_nano"] = span.start_time_unix_nano
    if span.end_time_unix_nano:
        event["end_timestamp"] = nanos_to_ms(span.end_time_unix_nano)
        event["end_time_unix_nano"] = span.end_time_unix_nano
    if span.start_time_unix_nano and span.end_time_unix_nano >= span.start_time_unix_nano:
        event["duration_ms"] = (span.end_time_unix_nano - span.start_time_unix_nano) / 1e6
    if span.attributes:
        event["attributes"] = attributes(span.attributes)
    status: dict[str, Any] = {
        "code": _enum_name(Status.StatusCode, span.status.code, "STATUS_CODE_")
    }
    if span.status.message:
        status["message"] = span.status.message
    event["status"] = status
    if span.events:
        event["events"] = [_span_event(item) for item in span.events]
    if span.links:
        event["links"] = [_link(item) for item in span.links]
    if span.flags:
        event["flags"] = span.flags
    for name in ("dropped_attributes_count", "dropped_events_count", "dropped_links_count"):
        if getattr(span, name):
            event[name] = getattr(span, name)
    return event


def _span_event(item: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": item.name, "timestamp": nanos_to_ms(item.time_unix_nano)}
    if item.attributes:
        out["attributes"] = attributes(item.attributes)
    return out


def _link(item: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"trace_id": hex_id(item.trace_id), "span_id": hex_id(item.span_id)}
    if item.trace_state:
        out["trace_state"] = item.trace_state
    if item.attributes:
        out["attributes"] = attributes(item.attributes)
    return out


def otlp_span_events(body: bytes, *, content_type: str | None) -> tuple[list[dict[str, Any]], bool]:
    """The events of an OTLP/HTTP traces request (inflated), and whether it was JSON
    (CPU work: call from a worker thread)."""
    message, is_json = parse_request(ExportTraceServiceRequest(), body, content_type)
    events: list[dict[str, Any]] = []
    for resource_spans in message.resource_spans:
        resources = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            scoped = scope(scope_spans.scope)
            for span in scope_spans.spans:
                if len(events) >= MAX_EVENTS:
                    raise PayloadTooLarge(f"More than {MAX_EVENTS} spans in one request")
                event = _span(span)
                if resources:
                    event["resources"] = resources
                if scoped:
                    event["scope"] = scoped
                events.append(checked_event(event, f"Span {len(events)}"))
    return events, is_json


class OpenTelemetryTracesConfig(BaseModel):
    """No options."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def receive(_config: OpenTelemetryTracesConfig, push: Push) -> Received:
    events, is_json = otlp_span_events(push.body, content_type=push.content_type)
    answer, media = response(ExportTraceServiceResponse(), is_json)
    return Received(events, answer=answer, media_type=media)


def _build(_config: OpenTelemetryTracesConfig, _context: BuildContext, _node: NodeRef) -> None:
    return None


COMPONENT: Component[OpenTelemetryTracesConfig] = Component(
    kind="source",
    type="open-telemetry-traces",
    config_model=OpenTelemetryTracesConfig,
    build=_build,
    describe="OTLP/HTTP traces (protobuf or JSON) at `/v1/traces` under the gateway route; "
    "each span an event",
    needs=Needs(gateway_route=True),
    receive=receive,
    paths=PATHS,
)

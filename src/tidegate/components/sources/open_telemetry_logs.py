"""The ``open-telemetry-logs`` source: OTLP/HTTP logs under the source's gateway route.

``POST /gateway/{gateway_route_id}/v1/logs`` with an ``ExportLogsServiceRequest``:
``Content-Type: application/x-protobuf`` (binary protobuf) or ``application/json``
(OTLP's JSON mapping: lowerCamelCase field names, ``traceId``/``spanId`` as hex,
64-bit integers as strings or numbers). ``Content-Encoding: gzip`` is accepted. The
answer is an empty ``ExportLogsServiceResponse`` in the request's encoding (status
200); a body that is not such a message is a 400. Credential: an access key of the
route (``Authorization: Token <key>``, set as an exporter header).

Each log record becomes one event (the names of the platform's OTLP source):

* ``message``: the record's body (a string, number, boolean, array or object);
* ``timestamp``: ``time_unix_nano`` in epoch milliseconds (``observed_time_unix_nano``
  when it is 0); ``observed_timestamp`` likewise;
* ``severity_text``, ``severity_number``, ``attributes`` (an object),
  ``resources`` (the resource's attributes), ``scope`` (``name``, ``version``,
  ``attributes``), ``trace_id`` and ``span_id`` (hex), ``flags``,
  ``dropped_attributes_count``, ``event_name``: when set.
"""

from __future__ import annotations

from typing import Any, Final

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from pydantic import BaseModel, ConfigDict

from tidegate.components.base import BuildContext, Component, Needs, NodeRef
from tidegate.components.sources.otlp import attributes, parse_request, response, scope, value
from tidegate.components.sources.push import Push, Received
from tidegate.errors import PayloadTooLarge
from tidegate.kit.body import MAX_EVENTS, checked_event

__all__ = [
    "COMPONENT",
    "LOGS_PATH",
    "PATHS",
    "OpenTelemetryLogsConfig",
    "otlp_answer",
    "otlp_log_events",
    "receive",
]

LOGS_PATH: Final = "v1/logs"
PATHS: Final = frozenset({LOGS_PATH})


def otlp_log_events(body: bytes, *, content_type: str | None) -> tuple[list[dict[str, Any]], bool]:
    """The events of an OTLP/HTTP logs request (inflated), and whether it was JSON
    (CPU work: call from a worker thread)."""
    message, is_json = parse_request(ExportLogsServiceRequest(), body, content_type)
    events: list[dict[str, Any]] = []
    for resource_logs in message.resource_logs:
        resources = attributes(resource_logs.resource.attributes)
        for scope_logs in resource_logs.scope_logs:
            scoped = scope(scope_logs.scope)
            for record in scope_logs.log_records:
                if len(events) >= MAX_EVENTS:
                    raise PayloadTooLarge(f"More than {MAX_EVENTS} log records in one request")
                event: dict[str, Any] = {"message": value(record.body)}
                observed = record.observed_time_unix_nano // 1_000_000
                stamp = record.time_unix_nano // 1_000_000 or observed
                if stamp:
                    event["timestamp"] = stamp
                if observed:
                    event["observed_timestamp"] = observed
                if record.severity_text:
                    event["severity_text"] = record.severity_text
                if record.severity_number:
                    event["severity_number"] = int(record.severity_number)
                if record.attributes:
                    event["attributes"] = attributes(record.attributes)
                if resources:
                    event["resources"] = resources
                if scoped:
                    event["scope"] = scoped
                if record.trace_id:
                    event["trace_id"] = record.trace_id.hex()
                if record.span_id:
                    event["span_id"] = record.span_id.hex()
                if record.flags:
                    event["flags"] = record.flags
                if record.dropped_attributes_count:
                    event["dropped_attributes_count"] = record.dropped_attributes_count
                if record.event_name:
                    event["event_name"] = record.event_name
                events.append(checked_event(event, f"Log record {len(events)}"))
    return events, is_json


def otlp_answer(is_json: bool) -> tuple[bytes, str]:
    """The success answer's body and content type."""
    return response(ExportLogsServiceResponse(), is_json)


class OpenTelemetryLogsConfig(BaseModel):
    """No options."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def receive(_config: OpenTelemetryLogsConfig, push: Push) -> Received:
    events, is_json = otlp_log_events(push.body, content_type=push.content_type)
    answer, media = otlp_answer(is_json)
    return Received(events, answer=answer, media_type=media)


def _build(_config: OpenTelemetryLogsConfig, _context: BuildContext, _node: NodeRef) -> None:
    return None


COMPONENT: Component[OpenTelemetryLogsConfig] = Component(
    kind="source",
    type="open-telemetry-logs",
    config_model=OpenTelemetryLogsConfig,
    build=_build,
    describe="OTLP/HTTP logs (protobuf or JSON) at `/v1/logs` under the gateway route",
    needs=Needs(gateway_route=True),
    receive=receive,
    paths=PATHS,
)

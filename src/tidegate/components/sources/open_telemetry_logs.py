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

import base64
import re
from typing import Any, Final

import orjson
from google.protobuf import json_format  # type: ignore[import-untyped]
from google.protobuf.message import DecodeError  # type: ignore[import-untyped]
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from pydantic import BaseModel, ConfigDict

from tidegate.components.base import BuildContext, Component, Needs, NodeRef
from tidegate.components.sources.push import Push, Received
from tidegate.errors import BadRequest, PayloadTooLarge, UnsupportedMediaType
from tidegate.gateway.body import MAX_DEPTH, MAX_EVENTS, checked_event, media_type

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
_PROTOBUF: Final = frozenset({"application/x-protobuf", "application/protobuf"})
_HEX: Final = re.compile(r"^[0-9a-fA-F]*$")


def _value(value: AnyValue, depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        raise BadRequest("An OTLP value is nested too deeply")
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "string_value":
        return value.string_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "int_value":
        return value.int_value
    if kind == "double_value":
        return value.double_value
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode("ascii")
    if kind == "array_value":
        return [_value(item, depth + 1) for item in value.array_value.values]
    return _attributes(value.kvlist_value.values, depth + 1)


def _attributes(items: Any, depth: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        assert isinstance(item, KeyValue)
        out[item.key] = _value(item.value, depth)
    return out


def _items(value: Any, key: str) -> list[Any]:
    found = value.get(key) if isinstance(value, dict) else None
    return found if isinstance(found, list) else []


def _hex_ids_to_base64(document: dict[str, Any]) -> None:
    """OTLP JSON carries trace and span ids as hex; protobuf's JSON mapping reads bytes
    as base64. Rewritten in place before parsing (anything odd is left for the parser
    to refuse)."""
    for resource in _items(document, "resourceLogs"):
        for scope in _items(resource, "scopeLogs"):
            for record in _items(scope, "logRecords"):
                if not isinstance(record, dict):
                    continue
                for name in ("traceId", "spanId"):
                    value = record.get(name)
                    if isinstance(value, str) and value and _HEX.match(value):
                        if len(value) % 2:
                            raise BadRequest(f"{name} must be hex of whole bytes")
                        record[name] = base64.b64encode(bytes.fromhex(value)).decode()


def _request(body: bytes, content_type: str | None) -> tuple[ExportLogsServiceRequest, bool]:
    media = media_type(content_type)
    message = ExportLogsServiceRequest()
    if media in _PROTOBUF:
        try:
            message.ParseFromString(body)
        except (DecodeError, RecursionError) as error:
            raise BadRequest(f"Body is not an OTLP ExportLogsServiceRequest: {error}") from None
        return message, False
    if media != "application/json":
        raise UnsupportedMediaType("OTLP/HTTP takes application/x-protobuf or application/json")
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise BadRequest(f"Body is not valid JSON: {error}") from None
    if not isinstance(document, dict):
        raise BadRequest("Body must be an OTLP ExportLogsServiceRequest object")
    _hex_ids_to_base64(document)
    try:
        json_format.ParseDict(document, message, ignore_unknown_fields=True)
    except (json_format.ParseError, RecursionError, ValueError) as error:
        raise BadRequest(f"Body is not an OTLP ExportLogsServiceRequest: {error}") from None
    return message, True


def otlp_log_events(body: bytes, *, content_type: str | None) -> tuple[list[dict[str, Any]], bool]:
    """The events of an OTLP/HTTP logs request (inflated), and whether it was JSON
    (CPU work: call from a worker thread)."""
    message, is_json = _request(body, content_type)
    events: list[dict[str, Any]] = []
    for resource_logs in message.resource_logs:
        resources = _attributes(resource_logs.resource.attributes)
        for scope_logs in resource_logs.scope_logs:
            scope_info = scope_logs.scope
            scope: dict[str, Any] = {}
            if scope_info.name:
                scope["name"] = scope_info.name
            if scope_info.version:
                scope["version"] = scope_info.version
            if scope_info.attributes:
                scope["attributes"] = _attributes(scope_info.attributes)
            for record in scope_logs.log_records:
                if len(events) >= MAX_EVENTS:
                    raise PayloadTooLarge(f"More than {MAX_EVENTS} log records in one request")
                event: dict[str, Any] = {"message": _value(record.body)}
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
                    event["attributes"] = _attributes(record.attributes)
                if resources:
                    event["resources"] = resources
                if scope:
                    event["scope"] = scope
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
    if is_json:
        return b"{}", "application/json"
    return ExportLogsServiceResponse().SerializeToString(), "application/x-protobuf"


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

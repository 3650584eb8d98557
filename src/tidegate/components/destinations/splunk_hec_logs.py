"""The ``splunk-hec-logs`` destination's configuration and wire format: Splunk's HTTP
Event Collector, event endpoint.

``POST <endpoint>/services/collector/event`` with ``Authorization: Splunk <token>``,
``Content-Type: application/json`` and one JSON object per event, each followed by
``\\n`` (HEC reads a stream of objects):

    {"time":<seconds>,"host":"<host>","source":"<source>","sourcetype":"<source_type>","index":"<index>","event":{...}}

``time``: the event's ``timestamp_field`` (default ``timestamp``) by the one timestamp
rule, in epoch seconds with milliseconds (left out when it holds no time); ``host``:
the event's ``host_field`` (default ``host``; left out when absent). Both fields are
removed from ``event``. ``source``, ``source_type``, ``index`` are sent when set (each
may hold ``{{ .field }}`` parts); ``compression`` gzip or none.

The platform's shape (its Terraform provider's) is taken as well: ``url`` for
``endpoint``; ``source``, ``sourcetype`` and ``index`` as ``{"value_type": "none" |
"value" | "field", "value": ...}`` (a field becomes ``{{ <field> }}``);
``tls_verify_certificate`` (true; false is refused: tidegate always verifies);
``ack_enabled`` (``outbound``). What was sent is what is stored and read back.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Annotated, Any, Final

import orjson
from pydantic import BaseModel, ConfigDict, Field, HttpUrl, field_validator, model_validator

from tidegate.components.base import Component
from tidegate.components.destinations.outbound import outbound_component
from tidegate.components.destinations.wire import (
    MAX_BODY_BYTES,
    Compression,
    Template,
    WireRequest,
    batched,
    check_header,
    event_seconds,
)
from tidegate.processing.fields import MISSING, FieldPath, FieldPathError, string_form

__all__ = ["COMPONENT", "SplunkHecLogsConfig", "splunk_hec_requests"]


_VALUE_TYPES: Final = {"source": "source", "sourcetype": "source_type", "index": "index"}


def _platform_value(name: str, value: Any) -> Any:
    """``{"value_type": ..., "value": ...}`` -> the template text (None: unset)."""
    if not isinstance(value, dict):
        return value
    kind, text = value.get("value_type"), value.get("value")
    extra = set(value) - {"value_type", "value"}
    if extra or kind not in ("none", "value", "field"):
        raise ValueError(f"{name}: value_type must be none, value or field")
    if kind == "none":
        return None
    if not isinstance(text, str) or not text:
        raise ValueError(f"{name}: a {kind} needs a non-empty value")
    if kind == "field":
        try:
            FieldPath.parse(text)
        except FieldPathError as error:
            raise ValueError(f"{name}: {error}") from None
        if "{" in text or "}" in text:
            raise ValueError(f"{name}: a field path may not hold {{ or }}")
        return "{{ " + text + " }}"
    if "{{" in text:
        raise ValueError(f"{name}: a constant value may not hold {{{{")
    return text


class SplunkHecLogsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    ack_enabled: bool = True
    endpoint: Annotated[HttpUrl, Field(max_length=2048)]
    token: Annotated[str, Field(min_length=1, max_length=512)]
    source: Annotated[str, Field(max_length=512)] | None = None
    source_type: Annotated[str, Field(max_length=512)] | None = None
    index: Annotated[str, Field(max_length=512)] | None = None
    host_field: Annotated[str, Field(min_length=1, max_length=512)] = "host"
    timestamp_field: Annotated[str, Field(min_length=1, max_length=512)] = "timestamp"
    compression: Compression = "none"
    max_bytes: Annotated[int, Field(strict=True, ge=1_024, le=MAX_BODY_BYTES)] = 1024 * 1024

    @model_validator(mode="before")
    @classmethod
    def _platform_shape(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if "url" in data and "endpoint" not in data:
            data["endpoint"] = data.pop("url")
        for name, ours in _VALUE_TYPES.items():
            if isinstance(data.get(name), dict):
                data[ours] = _platform_value(name, data.pop(name))
        if data.pop("tls_verify_certificate", True) is not True:
            raise ValueError("tls_verify_certificate: tidegate always verifies certificates")
        return data

    @field_validator("token")
    @classmethod
    def _token(cls, value: str) -> str:
        check_header("Authorization", f"Splunk {value}")
        return value

    @field_validator("host_field", "timestamp_field")
    @classmethod
    def _path(cls, value: str) -> str:
        try:
            FieldPath.parse(value)
        except FieldPathError as error:
            raise ValueError(str(error)) from None
        return value

    @field_validator("source", "source_type", "index")
    @classmethod
    def _template(cls, value: str | None) -> str | None:
        if value is not None:
            Template(value)
        return value


def _without(event: dict[str, Any], paths: Sequence[FieldPath]) -> dict[str, Any]:
    """``event`` without the top-level keys of one-segment ``paths`` (a copy)."""
    keys = {path.single_key for path in paths if path.single_key is not None}
    if not keys.intersection(event):
        return event
    return {key: value for key, value in event.items() if key not in keys}


def splunk_hec_requests(events: Sequence[Any], config: SplunkHecLogsConfig) -> list[WireRequest]:
    url = str(config.endpoint).rstrip("/") + "/services/collector/event"
    headers = [("Authorization", f"Splunk {config.token}"), ("Content-Type", "application/json")]
    host_path = FieldPath.parse(config.host_field)
    time_path = FieldPath.parse(config.timestamp_field)
    host_of, time_of = host_path.getter(), time_path.getter()
    extras = [
        (name, Template(value))
        for name, value in (
            ("source", config.source),
            ("sourcetype", config.source_type),
            ("index", config.index),
        )
        if value
    ]

    def chunks() -> Iterator[bytes]:
        for event in events:
            fields = event if isinstance(event, dict) else {"message": event}
            record: dict[str, Any] = {}
            stamp = time_of(fields)
            seconds = None if stamp is MISSING else event_seconds(stamp)
            if seconds is not None:
                record["time"] = seconds
            host = host_of(fields)
            if host is not MISSING and host is not None:
                record["host"] = string_form(host)
            for name, template in extras:
                rendered = template.render(fields)
                if rendered:
                    record[name] = rendered
            record["event"] = _without(fields, (host_path, time_path))
            yield orjson.dumps(record) + b"\n"

    return batched(
        chunks(),
        max_bytes=config.max_bytes,
        url=url,
        headers=headers,
        compression=config.compression,
    )


def _encode(
    config: SplunkHecLogsConfig, events: list[Any], _received_ms: int, _attempt: int
) -> list[WireRequest]:
    return splunk_hec_requests(events, config)


COMPONENT: Component[SplunkHecLogsConfig] = outbound_component(
    type_="splunk-hec-logs",
    config_model=SplunkHecLogsConfig,
    encode=_encode,
    urls=lambda config: [("/endpoint", config.endpoint)],
    describe="Splunk HTTP Event Collector (`/services/collector/event`, `Splunk <token>`)",
)

"""The ``loki`` destination's configuration and wire format: Loki's push API in JSON.

``POST <endpoint><path>`` (``path`` defaults to ``/loki/api/v1/push``) with
``Content-Type: application/json`` and the body

    {"streams":[{"stream":{"<label>":"<value>",...},"values":[["<ns>","<line>"],...]},...]}

Events are grouped into streams by their rendered ``labels`` (each value may hold
``{{ .field }}`` parts; a label whose value renders empty is left out, and a stream
left with no label at all is ``{"agent":"tidegate"}``), streams in the
order their first event came, values in event order. ``<ns>`` is the event's time
(``timestamp`` by the one timestamp rule, else the time tidegate received it) in
nanoseconds, as a string. ``<line>`` is the event as compact JSON (``encoding: json``)
or its ``message`` / ``line`` text (``encoding: text``). ``auth``, ``headers`` and
``compression`` as the http destination; ``tenant_id`` is sent as ``X-Scope-OrgID``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, HttpUrl, field_validator, model_validator

from tidegate.components.base import Component
from tidegate.components.destinations.outbound import outbound_component
from tidegate.components.destinations.wire import (
    MAX_BODY_BYTES,
    Auth,
    Compression,
    Headers,
    Template,
    WireRequest,
    auth_headers,
    compress,
    header_pairs,
)
from tidegate.logs.timestamps import epoch_ms

__all__ = ["COMPONENT", "LokiConfig", "loki_requests"]

# Loki refuses a stream without labels: when every label renders empty.
_FALLBACK_STREAM = (("agent", "tidegate"),)

_LABEL_NAME = r"^[a-zA-Z_][a-zA-Z0-9_]{0,127}$"


class LokiConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    ack_enabled: bool = True
    endpoint: Annotated[HttpUrl, Field(max_length=2048)]
    path: Annotated[str, Field(pattern=r"^/[^\s?#]{0,512}$")] = "/loki/api/v1/push"
    encoding: Literal["json", "text"] = "json"
    auth: Auth | None = None
    labels: Annotated[dict[str, str], Field(min_length=1, max_length=30)]
    headers: Headers = []
    compression: Compression = "none"
    tenant_id: Annotated[str, Field(max_length=256)] | None = None
    max_bytes: Annotated[int, Field(strict=True, ge=1_024, le=MAX_BODY_BYTES)] = 1024 * 1024

    @model_validator(mode="before")
    @classmethod
    def _platform_shape(cls, data: Any) -> Any:
        """The platform's shape: ``encoding: {"codec": ...}`` and ``labels`` as a list of
        ``{"label_name", "label_value"}``."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        encoding = data.get("encoding")
        if isinstance(encoding, dict) and set(encoding) == {"codec"}:
            data["encoding"] = encoding["codec"]
        labels = data.get("labels")
        if isinstance(labels, list):
            pairs = {}
            for item in labels:
                if not isinstance(item, dict) or set(item) != {"label_name", "label_value"}:
                    raise ValueError("labels: each item is {label_name, label_value}")
                pairs[item["label_name"]] = item["label_value"]
            data["labels"] = pairs
        return data

    @field_validator("labels")
    @classmethod
    def _labels(cls, labels: dict[str, str]) -> dict[str, str]:
        for name, value in labels.items():
            if not re.match(_LABEL_NAME, name):
                raise ValueError(f"{name!r} is not a Loki label name ([a-zA-Z_][a-zA-Z0-9_]*)")
            if len(value) > 1024:
                raise ValueError(f"the value of label {name!r} is over 1024 characters")
            Template(value)  # raises on a bad {{ }} part
        return labels


def _line(event: Any, encoding: str) -> str:
    if encoding == "text" and isinstance(event, dict):
        for name in ("message", "line"):
            value = event.get(name)
            if isinstance(value, str):
                return value
    return orjson.dumps(event).decode()


def loki_requests(
    events: Sequence[Any], config: LokiConfig, *, received_ms: int
) -> list[WireRequest]:
    """The push requests carrying ``events``: one per ``max_bytes`` of lines."""
    labels = {name: Template(value) for name, value in config.labels.items()}
    url = str(config.endpoint).rstrip("/") + config.path
    headers: list[tuple[str, str]] = [("Content-Type", "application/json")]
    headers += auth_headers(config.auth)
    if config.tenant_id:
        headers.append(("X-Scope-OrgID", config.tenant_id))
    headers += header_pairs(config.headers)

    requests: list[WireRequest] = []
    streams: dict[tuple[tuple[str, str], ...], list[list[str]]] = {}
    size = 0

    def flush() -> None:
        nonlocal size
        if not streams:
            return
        body = orjson.dumps(
            {
                "streams": [
                    {"stream": dict(key), "values": values} for key, values in streams.items()
                ]
            }
        )
        sent, extra = compress(body, config.compression)
        requests.append(WireRequest("POST", url, (*headers, *extra), sent))
        streams.clear()
        size = 0

    for event in events:
        fields = event if isinstance(event, dict) else {}
        key = (
            tuple(
                (name, rendered)
                for name, template in labels.items()
                if (rendered := template.render(fields))
            )
            or _FALLBACK_STREAM
        )
        millis = epoch_ms(fields.get("timestamp"))
        stamp = str((received_ms if millis is None else millis) * 1_000_000)
        line = _line(event, config.encoding)
        cost = len(line) + len(stamp) + 8
        if size and size + cost > config.max_bytes:
            flush()
        streams.setdefault(key, []).append([stamp, line])
        size += cost
    flush()
    return requests


def _encode(
    config: LokiConfig, events: list[Any], received_ms: int, _attempt: int
) -> list[WireRequest]:
    return loki_requests(events, config, received_ms=received_ms)


COMPONENT: Component[LokiConfig] = outbound_component(
    type_="loki",
    config_model=LokiConfig,
    encode=_encode,
    urls=lambda config: [("/endpoint", config.endpoint)],
    describe="Loki's push API (`/loki/api/v1/push`, JSON), streams by `labels`",
)

"""The ``splunk-hec`` source: Splunk's HTTP Event Collector protocol under the source's
gateway route.

Paths (``POST``), under ``/gateway/{gateway_route_id}``:

* ``/services/collector/event`` (also ``/services/collector`` and
  ``/services/collector/event/1.0``): a stream of JSON objects (concatenated, or
  separated by whitespace), each ``{"event": ..., "time": <epoch seconds>, "host",
  "source", "sourcetype", "index", "fields": {...}}``; ``event`` is required.
* ``/services/collector/raw`` (also ``/services/collector/raw/1.0``): plain text, one
  event per non-empty line; ``host``, ``source``, ``sourcetype``, ``index`` may be given
  as query parameters.

Credential: ``Authorization: Splunk <access key of the route>`` (the gateway also
takes ``Token <key>`` and the bare key). The answer is HEC's ``{"text":"Success",
"code":0}``.

Each HEC event becomes one event: an ``event`` that is an object is the event itself,
any other value is ``{"message": <value>}``; then, when given and not already set,
``host``, ``timestamp`` (``time`` in epoch milliseconds), ``splunk_source``,
``splunk_sourcetype``, ``splunk_index``, and each of ``fields`` (never overwriting).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from typing import Any, Final

from pydantic import BaseModel, ConfigDict

from tidegate.components.base import BuildContext, Component, Needs, NodeRef
from tidegate.components.sources.push import Push, Received
from tidegate.errors import BadRequest, PayloadTooLarge
from tidegate.kit.body import MAX_EVENTS, checked_event

__all__ = [
    "COMPONENT",
    "EVENT_PATHS",
    "PATHS",
    "RAW_PATHS",
    "SplunkHecConfig",
    "hec_events",
    "hec_raw_events",
    "receive",
]

EVENT_PATHS: Final = frozenset(
    {"services/collector", "services/collector/event", "services/collector/event/1.0"}
)
RAW_PATHS: Final = frozenset({"services/collector/raw", "services/collector/raw/1.0"})
PATHS: Final = EVENT_PATHS | RAW_PATHS
SUCCESS: Final = b'{"text":"Success","code":0}'

_DECODER: Final = json.JSONDecoder(parse_constant=lambda name: _refuse(name))
_SPACE: Final = " \t\r\n"


def _refuse(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _objects(text: str) -> Iterator[tuple[int, Any]]:
    """The JSON values of a stream of concatenated values, one at a time."""
    position, number = 0, 0
    size = len(text)
    while True:
        while position < size and text[position] in _SPACE:
            position += 1
        if position >= size:
            return
        number += 1
        try:
            value, position = _DECODER.raw_decode(text, position)
        except (ValueError, RecursionError) as error:
            raise BadRequest(f"HEC event {number} is not valid JSON: {error}") from None
        yield number, value


def _add(event: dict[str, Any], name: str, value: Any) -> None:
    if value is not None and value != "" and name not in event:
        event[name] = value


def _millis(value: Any) -> int | None:
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value < 0:
        return None
    return int(value * 1000)


def _event(item: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    body = item["event"]
    event: dict[str, Any] = dict(body) if isinstance(body, dict) else {"message": body}
    _add(event, "host", item.get("host", defaults.get("host")))
    _add(event, "timestamp", _millis(item.get("time")))
    for key in ("source", "sourcetype", "index"):
        _add(event, f"splunk_{key}", item.get(key, defaults.get(key)))
    fields = item.get("fields")
    if isinstance(fields, dict):
        for name, value in fields.items():
            _add(event, str(name), value)
    return event


def hec_events(body: bytes, *, defaults: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The events of an ``/event`` body (CPU work: call from a worker thread)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise BadRequest(f"HEC body is not UTF-8 ({error.reason})") from None
    events: list[dict[str, Any]] = []
    for number, item in _objects(text):
        if not isinstance(item, dict) or "event" not in item:
            raise BadRequest(f'HEC event {number} must be an object with "event"')
        if item["event"] is None or item["event"] == "":
            raise BadRequest(f"HEC event {number} has an empty event")
        if len(events) >= MAX_EVENTS:
            raise PayloadTooLarge(f"More than {MAX_EVENTS} events in one request")
        events.append(checked_event(_event(item, defaults), f"HEC event {number}"))
    if not events:
        raise BadRequest("No HEC event in the body")
    return events


def hec_raw_events(body: bytes, *, defaults: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The events of a ``/raw`` body: one per non-empty line."""
    text = body.decode("utf-8", "replace").replace("\x00", "\ufffd")
    events: list[dict[str, Any]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if len(events) >= MAX_EVENTS:
            raise PayloadTooLarge(f"More than {MAX_EVENTS} events in one request")
        events.append(_event({"event": line}, defaults))
    if not events:
        raise BadRequest("Empty body")
    return events


class SplunkHecConfig(BaseModel):
    """No options: the route's access keys are the HEC tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True)


_DEFAULTS: Final = ("host", "source", "sourcetype", "index")


def receive(_config: SplunkHecConfig, push: Push) -> Received:
    defaults = {name: push.query[name] for name in _DEFAULTS if push.query.get(name)}
    if push.path in RAW_PATHS:
        events = hec_raw_events(push.body, defaults=defaults)
    else:
        events = hec_events(push.body, defaults=defaults)
    return Received(events, answer=SUCCESS, media_type="application/json")


def _build(_config: SplunkHecConfig, _context: BuildContext, _node: NodeRef) -> None:
    return None


COMPONENT: Component[SplunkHecConfig] = Component(
    kind="source",
    type="splunk-hec",
    config_model=SplunkHecConfig,
    build=_build,
    describe="Splunk HTTP Event Collector under the gateway route: `/services/collector/event` and `/services/collector/raw`; `Authorization: Splunk <access key>`",
    needs=Needs(gateway_route=True),
    receive=receive,
    paths=PATHS,
)

"""The ``mezmo-agent`` source: the platform agent (logdna-agent-v2) sending to the
source's gateway route, with ``LOGDNA_HOST``/``LOGDNA_ENDPOINT`` pointing at
``/gateway/{id}`` and an access key of the route as its ingestion key.

The request is the agent's own (``shared/spec/clients.md``): gzip JSON ``{"lines":
[...]}`` with ``apiKey: <key>`` (the gateway takes it as the credential) and the query
``hostname``, ``mac``, ``ip``, ``tags``, ``now``. Each line object is one event with
its keys as sent (``line``, ``app``, ``file``, ``host``, ``level``, ``env``, ``meta``,
``label``, ``annotation``...), and:

* ``timestamp`` in epoch milliseconds (the agent sends seconds: a number below 10^11 is
  read as seconds);
* ``app`` the file's base name when the line names a file and no app, as the platform
  files it;
* ``host`` the query's ``hostname`` when the line has none; ``ip``, ``mac`` and ``tags``
  (a list) from the query when given.

No options (the provider sends ``{}``).
"""

from __future__ import annotations

from typing import Any, Final

import orjson
from pydantic import BaseModel, ConfigDict

from tidegate.components.base import BuildContext, Component, Needs, NodeRef
from tidegate.components.sources.push import ROUTE_ITSELF, Push, Received
from tidegate.errors import BadRequest, PayloadTooLarge
from tidegate.kit.body import MAX_EVENTS, checked_event

__all__ = ["COMPONENT", "MezmoAgentConfig", "agent_events", "receive"]

_SECONDS_BELOW: Final = 100_000_000_000


class MezmoAgentConfig(BaseModel):
    """No options."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def _lines(body: bytes) -> list[Any]:
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise BadRequest(f"The body is not valid JSON: {error}") from None
    lines = document.get("lines") if isinstance(document, dict) else None
    if not isinstance(lines, list) or not lines:
        raise BadRequest('The body must be {"lines": [...]} with at least one line')
    if len(lines) > MAX_EVENTS:
        raise PayloadTooLarge(f"More than {MAX_EVENTS} lines in one request")
    return lines


def _file_app(file: str) -> str:
    """The app the platform files a line under when it names a file and no app."""
    return file.rsplit("/", 1)[-1].rsplit("\\", 1)[-1] or file


def _millis(value: Any) -> Any:
    if isinstance(value, int | float) and not isinstance(value, bool) and value < _SECONDS_BELOW:
        return int(value * 1000)
    return value


def agent_events(body: bytes, query: dict[str, str]) -> list[dict[str, Any]]:
    """The events of an agent request (CPU work: call from a worker thread)."""
    lines = _lines(body)
    tags = [tag.strip() for tag in query.get("tags", "").split(",") if tag.strip()]
    events = []
    for number, item in enumerate(lines, start=1):
        if not isinstance(item, dict) or "line" not in item:
            raise BadRequest(f'Line {number} must be an object with "line"')
        event = dict(item)
        if "timestamp" in event:
            event["timestamp"] = _millis(event["timestamp"])
        if not event.get("app") and isinstance(event.get("file"), str) and event["file"]:
            event["app"] = _file_app(event["file"])
        if not event.get("host") and query.get("hostname"):
            event["host"] = query["hostname"]
        for name in ("ip", "mac"):
            if query.get(name) and name not in event:
                event[name] = query[name]
        if tags and "tags" not in event:
            event["tags"] = tags
        events.append(checked_event(event, f"Line {number}", check_strings=True))
    return events


def receive(_config: MezmoAgentConfig, push: Push) -> Received:
    return Received(agent_events(push.body, dict(push.query)))


def _build(_config: MezmoAgentConfig, _context: BuildContext, _node: NodeRef) -> None:
    return None


COMPONENT: Component[MezmoAgentConfig] = Component(
    kind="source",
    type="mezmo-agent",
    config_model=MezmoAgentConfig,
    build=_build,
    describe="The platform agent's requests (gzip JSON `lines`, `apiKey: <access "
    "key>`) to the gateway route",
    needs=Needs(gateway_route=True),
    receive=receive,
    paths=frozenset({ROUTE_ITSELF}),
)

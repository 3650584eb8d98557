"""The ``logstash`` source: Logstash's ``http`` output plugin posting to the source's
gateway route (``POST /gateway/{id}``).

``format`` (default ``json``): ``json`` takes what the plugin sends with ``format =>
"json"`` (one object), ``"json_batch"`` (an array of objects) and NDJSON (one object
per line); ``text`` makes the whole body one event ``{"message": "<body>"}`` (the
plugin's ``format => "message"``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from tidegate.components.base import BuildContext, Component, Needs, NodeRef
from tidegate.components.sources.decoding import decode_events
from tidegate.components.sources.push import ROUTE_ITSELF, Push, Received

__all__ = ["COMPONENT", "LogstashConfig", "receive"]


class LogstashConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    format: Literal["json", "text"] = "json"


def receive(config: LogstashConfig, push: Push) -> Received:
    if config.format == "text":
        return Received(decode_events(push.body, decoding="bytes", content_type=None))
    # The plugin says application/json for json and json_batch; NDJSON is recognised.
    return Received(decode_events(push.body, decoding="auto", content_type="application/json"))


def _build(_config: LogstashConfig, _context: BuildContext, _node: NodeRef) -> None:
    return None


COMPONENT: Component[LogstashConfig] = Component(
    kind="source",
    type="logstash",
    config_model=LogstashConfig,
    build=_build,
    describe="Logstash's http output posting to the gateway route (`format`: json, text)",
    needs=Needs(gateway_route=True),
    receive=receive,
    paths=frozenset({ROUTE_ITSELF}),
)

"""The ``fluent`` source: Fluent Bit's ``http`` output (and Fluentd's ``out_http``)
posting to the source's gateway route (``POST /gateway/{id}``).

``decoding`` (the provider's values; default ``json``): ``json`` takes Fluent Bit's
``Format json`` (an array of records, each with its ``date`` key) or one object;
``ndjson`` its ``Format json_lines``; ``bytes`` the whole body as one event
``{"message": ...}``. The records are the events, unchanged (``decoding.py``).

Not built: the Fluent *Forward* protocol (msgpack over TCP, Fluent Bit's ``forward``
output): the provider's resource configures no port and no shared key, and sources
receive through their gateway route.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from tidegate.components.base import BuildContext, Component, Needs, NodeRef
from tidegate.components.sources.decoding import decode_events
from tidegate.components.sources.push import ROUTE_ITSELF, Push, Received

__all__ = ["COMPONENT", "FluentConfig", "receive"]


class FluentConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    decoding: Literal["bytes", "json", "ndjson"] = "json"


def receive(config: FluentConfig, push: Push) -> Received:
    return Received(decode_events(push.body, decoding=config.decoding, content_type=None))


def _build(_config: FluentConfig, _context: BuildContext, _node: NodeRef) -> None:
    return None


COMPONENT: Component[FluentConfig] = Component(
    kind="source",
    type="fluent",
    config_model=FluentConfig,
    build=_build,
    describe="Fluent Bit's / Fluentd's http output posting to the gateway route "
    "(`decoding`: json, ndjson, bytes)",
    needs=Needs(gateway_route=True),
    receive=receive,
    paths=frozenset({ROUTE_ITSELF}),
)

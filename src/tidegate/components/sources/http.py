"""The ``http`` source: events POSTed to its gateway route (``POST /gateway/{id}``).

Options: ``decoding`` (``auto`` default, ``json``, ``ndjson``, ``bytes``; see
``decoding.py``) and ``capture_metadata`` (each event gains ``metadata: {headers,
query}`` of its request, credentials and signatures left out, unless it has a
``metadata`` field already).
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import BaseModel, ConfigDict

from tidegate.components.base import BuildContext, Component, Needs, NodeRef
from tidegate.components.sources.decoding import Decoding, decode_events
from tidegate.components.sources.push import ROUTE_ITSELF, Push, Received

__all__ = ["COMPONENT", "PATHS", "HttpSourceConfig", "receive", "request_metadata"]

PATHS: Final = frozenset({ROUTE_ITSELF})
# Never copied into events: credentials and signatures.
_PRIVATE_HEADERS: Final = frozenset(
    {
        "authorization",
        "cookie",
        "x-hub-signature",
        "apikey",
        "proxy-authorization",
        "x-amz-firehose-access-key",
        "dd-api-key",
    }
)


class HttpSourceConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    decoding: Decoding = "auto"
    capture_metadata: bool = False


def request_metadata(push: Push) -> dict[str, Any]:
    return {
        "headers": {
            name: value for name, value in push.headers.items() if name not in _PRIVATE_HEADERS
        },
        "query": {name: value for name, value in push.query.items() if name != "apikey"},
    }


def receive(config: HttpSourceConfig, push: Push) -> Received:
    events = decode_events(push.body, decoding=config.decoding, content_type=push.content_type)
    if config.capture_metadata:
        metadata = request_metadata(push)
        events = [
            event if "metadata" in event else {**event, "metadata": metadata} for event in events
        ]
    return Received(events)


def _build(_config: HttpSourceConfig, _context: BuildContext, _node: NodeRef) -> None:
    return None


COMPONENT: Component[HttpSourceConfig] = Component(
    kind="source",
    type="http",
    config_model=HttpSourceConfig,
    build=_build,
    describe="Events POSTed to the source's gateway route (`decoding`: auto, json, "
    "ndjson, bytes; `capture_metadata`)",
    needs=Needs(gateway_route=True),
    receive=receive,
    paths=PATHS,
)

"""What the destinations of a vendor's fixed HTTP API (``datadog-logs``, ``new-relic``,
``honeycomb-logs``) share: the API's base URL (the vendor's, or the operator's
``TIDEGATE_DESTINATION_ENDPOINTS`` entry for the type: ``BuildContext.endpoints``),
JSON array batches within the API's limits, and the outbound machinery (retries with
backoff, the destination guard at every connection, ``ack_enabled``: ``outbound.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import Any, TypeVar

from pydantic import BaseModel, HttpUrl

from tidegate.components.base import BuildContext, Component
from tidegate.components.destinations.http_sender import OutboundSender
from tidegate.components.destinations.outbound import Authorize, Encoder, outbound_component
from tidegate.components.destinations.wire import WireRequest

__all__ = ["VendorEncoder", "json_arrays", "vendor_component"]

C = TypeVar("C", bound=BaseModel)
VendorEncoder = Callable[[C, list[dict[str, Any]], int, str], list[WireRequest]]
"""``(config, events, received_ms, base URL)`` -> the requests."""


def json_arrays(items: Iterable[bytes], *, max_bytes: int, max_items: int) -> Iterator[bytes]:
    """JSON arrays of the encoded ``items``, each at most ``max_bytes`` (an item larger
    alone travels alone) and ``max_items`` long."""
    parts: list[bytes] = []
    size = 2
    for item in items:
        if parts and (len(parts) >= max_items or size + len(item) + 1 > max_bytes):
            yield b"[" + b",".join(parts) + b"]"
            parts, size = [], 2
        parts.append(item)
        size += len(item) + 1
    if parts:
        yield b"[" + b",".join(parts) + b"]"


def vendor_component(
    *,
    type_: str,
    config_model: type[C],
    encode: VendorEncoder[C],
    base_url: Callable[[C], str],
    describe: str,
    accepted: Callable[[bytes], bool] | None = None,
    urls: Callable[[C], list[tuple[str, HttpUrl]]] = lambda _config: [],
    authorizer: Callable[[C, OutboundSender], Authorize] | None = None,
) -> Component[C]:
    """``urls``: other hosts the node talks to, checked on save (a token endpoint);
    ``authorizer``: its credential per delivery (``outbound.py``)."""

    def encoder(
        base: str | None, config: C, events: list[Any], received_ms: int, _attempt: int
    ) -> list[WireRequest]:
        return encode(config, events, received_ms, base or base_url(config))

    def bind(_default: Encoder[C], context: BuildContext) -> Encoder[C]:
        return partial(encoder, context.endpoints.get(type_))

    return outbound_component(
        type_=type_,
        config_model=config_model,
        encode=partial(encoder, None),
        urls=urls,
        describe=describe,
        accepted=accepted,
        bind=bind,
        authorizer=authorizer,
    )

"""What a push source is given (``Push``: one request to its gateway route) and what it
gives back (``Received``: the events, and the answer when its protocol has its own).

A push source declares the ``paths`` under ``/gateway/{gateway_route_id}`` it serves
(``""`` is the route itself) and a ``receive(config, push)`` function: plain CPU work
run in a worker thread, raising the error hierarchy's 4xx for what it refuses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = ["ROUTE_ITSELF", "Push", "Received"]

ROUTE_ITSELF: Final = ""


@dataclass(frozen=True, slots=True)
class Push:
    path: str
    """Below the route, without the leading slash: ``""``, ``"v1/logs"``..."""
    raw: bytes
    """The body as sent (what signatures cover)."""
    body: bytes
    """The body with its ``Content-Encoding`` undone."""
    content_type: str | None = None
    query: Mapping[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    """Lower-cased names."""
    signature: str | None = None


@dataclass(frozen=True, slots=True)
class Received:
    events: list[dict[str, Any]]
    answer: bytes | None = None
    media_type: str | None = None

"""What a pull source is given (``PullContext``) and gives back (``Pulled``).

A pull source fetches its events itself (an SQS queue, S3 objects announced on one):
``Component.pull(config, context)`` is called by the worker's pull scheduler
(``runtime/pull_sources.py``) about once a second per published node. It returns the
events fetched and ``done``, which the scheduler awaits only once every destination of
the pipeline took them: what is not done is fetched again later (at-least-once).
A source may keep state per node in its built runtime (``PullContext.runtime``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

__all__ = ["PullContext", "Pulled", "nothing_to_do"]


async def nothing_to_do() -> None:
    return None


@dataclass(frozen=True, slots=True)
class PullContext:
    client: httpx.AsyncClient
    """The destination guard's client: a tenant's URL cannot reach a private address."""
    timeout_s: float = 20.0
    s3_endpoint: str = ""
    """The S3 API's endpoint (``TIDEGATE_S3_ENDPOINT``); empty: AWS's of the region."""
    runtime: Any = None
    """The node's built runtime (``Component.build``): a source that keeps a connection
    (a Kafka consumer) keeps it there; one with an ``aclose`` is closed when the node is
    no longer pulled."""


@dataclass(frozen=True, slots=True)
class Pulled:
    events: list[dict[str, Any]]
    done: Callable[[], Awaitable[None]] = nothing_to_do

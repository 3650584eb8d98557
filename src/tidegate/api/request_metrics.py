"""Pure ASGI middleware that measures every request for ``GET /metrics`` by route group.

The outermost layer, so what it sees is what the client saw: answers of the body guard
(413, 408, 503) and of the error handlers included. Labels come from fixed sets only
(``GROUPS``, status classes, ``INGEST_RESULTS``), never from the path itself, so no
tenant can grow the series (docs/metrics.md). The group is read from the path with a few
prefix comparisons: constant work per request, no pattern matching.
"""

from __future__ import annotations

import time
from typing import Final

from prometheus_client.metrics import Counter, Gauge, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tidegate import metrics

# (prefix, group), first match wins; a path matching none is "other".
_PREFIXES: Final = (
    ("/logs/", "ingest"),
    ("/gateway/", "gateway"),
    ("/v2/export", "export"),
    ("/v1/export", "export"),
    ("/v1/aggregate", "aggregate"),
    ("/v1/tail", "tail"),
    ("/ws/tail", "tail"),
    ("/v1/", "api"),
    ("/v2/", "api"),
    ("/v3/", "api"),
    ("/login", "api"),
    ("/orgs", "api"),
    ("/info", "api"),
    ("/metrics", "internal"),
    ("/healthz", "internal"),
    ("/docs", "docs"),
    ("/redoc", "docs"),
    ("/openapi.json", "docs"),
)
GROUPS: Final = (*dict.fromkeys(group for _, group in _PREFIXES), "web", "other")
# Status classes; "none": the client went away before any answer started.
CODES: Final = ("1xx", "2xx", "3xx", "4xx", "5xx", "none")
# Why an ingest request was refused, by its status (the error bodies say more).
_INGEST_REASONS: Final = {
    400: "bad_request",
    401: "no_credentials",
    403: "forbidden",
    408: "timeout",
    413: "too_large",
    415: "unsupported_encoding",
    429: "rate_limited",
    503: "unavailable",
}
INGEST_RESULTS: Final = ("accepted", *_INGEST_REASONS.values(), "error", "aborted")


def route_group(path: str, method: str) -> str:
    for prefix, group in _PREFIXES:
        if path.startswith(prefix):
            return group
    # The web app's pages are served at its own addresses (/, /search, /boards/...).
    return "web" if method in ("GET", "HEAD") else "other"


def _code(status: int) -> str:
    return CODES[status // 100 - 1] if 100 <= status < 600 else "none"


def ingest_result(status: int) -> str:
    if status == 0:
        return "aborted"
    if status < 400:
        return "accepted"
    return _INGEST_REASONS.get(status, "error")


class _Series:
    """Every labelled child resolved once: the hot path indexes dicts, never labels()."""

    def __init__(self) -> None:
        self.duration: dict[tuple[str, str], Histogram] = {
            (group, code): metrics.HTTP_REQUEST_SECONDS.labels(group, code)
            for group in GROUPS
            for code in CODES
        }
        self.in_flight: dict[str, Gauge] = {
            group: metrics.HTTP_IN_FLIGHT.labels(group) for group in GROUPS
        }
        self.ingest: dict[str, tuple[Counter, Counter]] = {
            result: (
                metrics.INGEST_REQUESTS.labels(result),
                metrics.INGEST_REQUEST_BYTES.labels(result),
            )
            for result in INGEST_RESULTS
        }
        self.tail = {
            transport: (
                metrics.TAIL_SESSIONS.labels(transport),
                metrics.TAIL_SESSIONS_OPEN.labels(transport),
                metrics.TAIL_SESSION_SECONDS.labels(transport),
            )
            for transport in ("sse", "websocket")
        }


class RequestMetrics:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.series = _Series()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        group = route_group(path, scope.get("method", "GET"))
        if group == "tail":
            await self._tail(scope, receive, send, "websocket" if kind == "websocket" else "sse")
            return
        status = 0
        received = 0

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            return message

        async def watching_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        in_flight = self.series.in_flight[group]
        in_flight.inc()
        started = time.perf_counter()
        try:
            await self.app(scope, counting_receive if group == "ingest" else receive, watching_send)
        except Exception:
            # Starlette answers an unhandled error outside this layer (its server-error
            # middleware, where the app's catch-all handler runs): that answer is a 500.
            if status == 0:
                status = 500
            raise
        finally:
            self.series.duration[group, _code(status)].observe(time.perf_counter() - started)
            in_flight.dec()
            if group == "ingest":
                requests, size = self.series.ingest[ingest_result(status)]
                requests.inc()
                size.inc(received)

    async def _tail(self, scope: Scope, receive: Receive, send: Send, transport: str) -> None:
        opened, open_now, duration = self.series.tail[transport]
        in_flight = self.series.in_flight["tail"]
        opened.inc()
        open_now.inc()
        in_flight.inc()
        started = time.perf_counter()
        try:
            await self.app(scope, receive, send)
        finally:
            duration.observe(time.perf_counter() - started)
            open_now.dec()
            in_flight.dec()

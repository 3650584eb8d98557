"""Routing without walking every route: the app's routers are skipped, on a request whose
path none of their routes can match, before FastAPI tries their routes one by one.

FastAPI matches a request against the app's included routers in order, and each of them
against its routes in order (a regular expression and a few scope entries per route), so
a request paid for every route registered before its own: 120-575 us of routing per
request measured on this machine, more than the whole request of the FastAPI+driver floor
(docs/decisions.md, "The request path"). A route's path pattern is anchored and starts
with the literal text of its path up to the first ``{``, so a router none of whose
routes' literal beginnings starts the request's path matches it neither fully nor
partly: skipping it changes no answer (404, 405 and the trailing-slash redirect are
decided from the same matches). Only the app's own included routers are given the check
(an instance attribute, no change to FastAPI's classes), and only those whose routes are
all plain routes; anything else is matched as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute, APIWebSocketRoute
from starlette._utils import get_route_path
from starlette.routing import Match, Route, WebSocketRoute

_PLAIN = (APIRoute, APIWebSocketRoute, Route, WebSocketRoute)


def literal_prefixes(routes: list[Any]) -> tuple[str, ...] | None:
    """What every path one of ``routes`` matches starts with (one entry per route), or
    None when a route is not a plain one (a mount, a host, a nested router)."""
    prefixes = set()
    for route in routes:
        if not isinstance(route, _PLAIN):
            return None
        prefixes.add(route.path_format.split("{", 1)[0])
    return tuple(sorted(prefixes))


def _prefiltered(included: Any) -> Callable[[Any], tuple[Match, dict[str, Any]]] | None:
    router = included.original_router
    if getattr(included.include_context, "prefix", ""):
        return None  # the routes' paths would not be the request's (no such include here)
    matches = included.matches  # FastAPI's own, bound
    seen: list[Any] = [None, None]  # (number of routes, prefixes) when last computed

    def prefiltered(scope: Any) -> tuple[Match, dict[str, Any]]:
        routes = router.routes
        if seen[0] != len(routes):  # routes added after start-up: recompute
            seen[:] = [len(routes), literal_prefixes(routes)]
        prefixes = seen[1]
        if prefixes is not None and not get_route_path(scope).startswith(prefixes):
            return Match.NONE, {}
        result: tuple[Match, dict[str, Any]] = matches(scope)
        return result

    return prefiltered


def prefilter_routers(app: FastAPI) -> int:
    """Give each of the app's included routers the check; the number given it."""
    given = 0
    for route in app.router.routes:
        if not hasattr(route, "original_router") or not hasattr(route, "include_context"):
            continue  # not an included router (FastAPI's private _IncludedRouter)
        check = _prefiltered(route)
        if check is not None:
            vars(route)["matches"] = check  # this instance only
            given += 1
    return given

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

The same holds of a path's depth (its number of ``/``): a path parameter's text holds
no ``/`` (but under the ``path`` convertor), so a route matches only paths of its own
depth. A router none of whose routes has the request's depth is skipped too, and the
router that may match walks only its routes of that depth (and those whose depth is not
fixed), in their order: the pipelines' router holds 38 routes under ``/v3/pipeline/``,
and FastAPI walks the matching router twice (once to match, once to pick the route), so
a pipeline node's get tried 20 regular expressions where its depth leaves 2.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute, APIWebSocketRoute
from starlette._utils import get_route_path
from starlette.convertors import PathConvertor
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


def route_depths(routes: list[Any]) -> frozenset[int] | None:
    """How many ``/`` the paths ``routes`` match hold (``path_depth``), or None when
    one of them does not fix it (``route_depth``)."""
    depths = set()
    for route in routes:
        depth = route_depth(route)
        if depth is None:
            return None
        depths.add(depth)
    return frozenset(depths)


def _prefiltered(included: Any) -> Callable[[Any], tuple[Match, dict[str, Any]]] | None:
    router = included.original_router
    if getattr(included.include_context, "prefix", ""):
        return None  # the routes' paths would not be the request's (no such include here)
    matches = included.matches  # FastAPI's own, bound
    # (number of routes, prefixes, depths) when last computed
    seen: list[Any] = [None, None, None]

    def prefiltered(scope: Any) -> tuple[Match, dict[str, Any]]:
        routes = router.routes
        if seen[0] != len(routes):  # routes added after start-up: recompute
            seen[:] = [len(routes), literal_prefixes(routes), route_depths(routes)]
        prefixes = seen[1]
        path = get_route_path(scope)
        if prefixes is not None and not path.startswith(prefixes):
            return Match.NONE, {}
        if seen[2] is not None and path.count("/") not in seen[2]:
            return Match.NONE, {}
        result: tuple[Match, dict[str, Any]] = matches(scope)
        return result

    return prefiltered


def route_depth(route: Any) -> int | None:
    """How many ``/`` every path ``route`` matches holds, or None when that is not
    fixed: a parameter of the ``path`` convertor (the only one whose text may hold a
    ``/``), or anything not a plain route (a mount, a host, a nested router)."""
    if not isinstance(route, _PLAIN):
        return None
    if any(isinstance(c, PathConvertor) for c in route.param_convertors.values()):
        return None
    return str(route.path_format).count("/")


def path_depth(candidate: Any) -> int | None:
    """``route_depth`` of one of an included router's effective candidates (None for a
    nested router, or a route FastAPI matches by a pattern of its own)."""
    if getattr(candidate, "starlette_route", None) is not None:
        return None
    return route_depth(getattr(candidate, "original_route", None))


def _depth_filtered(included: Any) -> Callable[[Any], Any]:
    """``included._match`` over only the candidates that can match the request's path:
    those of its depth (``path_depth``) and those whose depth is not fixed, in their
    order. A path parameter's text holds no ``/`` (but under the ``path`` convertor),
    and a route's pattern is anchored, so a candidate of another depth matches the path
    neither fully nor partly: skipping it changes no answer. FastAPI's own ``_match``
    does the matching; only the list it walks (``effective_candidates``, read while the
    cell below is set, which ``_match`` never awaits across) is the shorter one."""
    match = included._match  # FastAPI's own, bound
    candidates = included.effective_candidates  # FastAPI's own, bound
    wanted: list[int | None] = [None]  # the request's depth while its match runs
    lists: dict[int, list[Any]] = {}
    seen: list[Any] = [None]  # the candidate list the depth lists were built from

    def effective_candidates() -> list[Any]:
        every: list[Any] = candidates()
        depth = wanted[0]
        if depth is None:
            return every
        if seen[0] is not every:  # FastAPI rebuilt its list: rebuild ours
            lists.clear()
            seen[0] = every
        found = lists.get(depth)
        if found is None:
            found = lists[depth] = [
                candidate for candidate in every if path_depth(candidate) in (None, depth)
            ]
        return found

    def depth_filtered(scope: Any) -> Any:
        wanted[0] = get_route_path(scope).count("/")
        try:
            return match(scope)
        finally:
            wanted[0] = None

    vars(included)["effective_candidates"] = effective_candidates
    return depth_filtered


def prefilter_routers(app: FastAPI) -> int:
    """Give each of the app's included routers the check, and the depth filter of its
    routes; the number given them."""
    given = 0
    for route in app.router.routes:
        if not hasattr(route, "original_router") or not hasattr(route, "include_context"):
            continue  # not an included router (FastAPI's private _IncludedRouter)
        check = _prefiltered(route)
        if check is not None:
            vars(route)["matches"] = check  # this instance only
            vars(route)["_match"] = _depth_filtered(route)
            given += 1
    return given

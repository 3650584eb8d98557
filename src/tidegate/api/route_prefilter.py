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
a pipeline node's get tried 20 regular expressions where its depth leaves 2. Of those,
it walks only the ones whose literal segments are the path's (``source`` is not
``alert``): a pipeline alert's get has a node's depth, and tried the 20 node routes of
it in each walk.

A router nested in an included one (the pipeline alerts' in the pipelines') is checked
and filtered the same way, its include's prefix before its routes' paths; its routes
count in the including router's prefixes and depths, and it is a candidate only for
the depths its routes have.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter
from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute, APIWebSocketRoute
from starlette._utils import get_route_path
from starlette.convertors import PathConvertor
from starlette.routing import Match, Route, WebSocketRoute

_PLAIN = (APIRoute, APIWebSocketRoute, Route, WebSocketRoute)


def _is_included(route: Any) -> bool:
    """Whether ``route`` is an included router (FastAPI's private ``_IncludedRouter``)."""
    return hasattr(route, "original_router") and hasattr(route, "include_context")


def _patterns(routes: list[Any], prefix: str = "") -> list[tuple[str, Any]] | None:
    """The path format (``prefix`` before it) and convertors of each of ``routes`` and of
    the routes of the routers included in them, their include's prefix before their
    paths, as FastAPI matches them; None when one is not a plain route (a mount, a host)
    or an include's prefix holds a parameter."""
    found: list[tuple[str, Any]] = []
    for route in routes:
        if _is_included(route):
            inner_prefix = str(route.include_context.prefix)
            if "{" in inner_prefix:
                return None
            inner = _patterns(route.original_router.routes, prefix + inner_prefix)
            if inner is None:
                return None
            found += inner
        elif isinstance(route, _PLAIN):
            found.append((prefix + route.path_format, route.param_convertors))
        else:
            return None
    return found


def literal_prefixes(routes: list[Any], prefix: str = "") -> tuple[str, ...] | None:
    """What every path one of ``routes`` (under ``prefix``, and those of the routers
    nested in them) matches starts with (one entry per route), or None when a route is
    not a plain one (a mount, a host)."""
    patterns = _patterns(routes, prefix)
    if patterns is None:
        return None
    return tuple(sorted({path.split("{", 1)[0] for path, _ in patterns}))


def route_depths(routes: list[Any], prefix: str = "") -> frozenset[int] | None:
    """How many ``/`` the paths ``routes`` (under ``prefix``, and those of the routers
    nested in them) match hold (``path_depth``), or None when one of them does not fix
    it (``route_depth``)."""
    patterns = _patterns(routes, prefix)
    if patterns is None:
        return None
    depths = set()
    for path, convertors in patterns:
        if any(isinstance(c, PathConvertor) for c in convertors.values()):
            return None
        depths.add(path.count("/"))
    return frozenset(depths)


def _nested_lists(router: Any) -> tuple[tuple[list[Any], int], ...]:
    """The route lists of the routers nested in ``router`` (and in them), each with its
    length now: what grows when a route is added to one of them."""
    found: list[tuple[list[Any], int]] = []
    for route in router.routes:
        if _is_included(route):
            inner = route.original_router
            found += [(inner.routes, len(inner.routes)), *_nested_lists(inner)]
    return tuple(found)


def _grown(nested: tuple[tuple[list[Any], int], ...]) -> bool:
    return any(len(routes) != length for routes, length in nested)


def _prefiltered(included: Any) -> Callable[[Any], tuple[Match, dict[str, Any]]]:
    router = included.original_router
    prefix = str(included.include_context.prefix)  # before its routes' own paths
    matches = included.matches  # FastAPI's own, bound
    # (number of routes, prefixes, depths, the nested routers' route lists and their
    # lengths) when last computed
    seen: list[Any] = [None, None, None, ()]

    def prefiltered(scope: Any) -> tuple[Match, dict[str, Any]]:
        routes = router.routes
        if seen[0] != len(routes) or (seen[3] and _grown(seen[3])):  # routes added
            seen[:] = [
                len(routes),
                literal_prefixes(routes, prefix),
                route_depths(routes, prefix),
                _nested_lists(router),
            ]
        prefixes = seen[1]
        path = get_route_path(scope)
        if prefixes is not None and not path.startswith(prefixes):
            return Match.NONE, {}
        if seen[2] is not None and path.count("/") not in seen[2]:
            return Match.NONE, {}
        result: tuple[Match, dict[str, Any]] = matches(scope)
        return result

    return prefiltered


def path_depths(candidate: Any) -> frozenset[int] | None:
    """How many ``/`` the paths one of an included router's effective candidates
    matches hold: a FastAPI route's context's own (its include's prefix in its path), a
    nested router's routes' (``route_depths``); None when that is not fixed (a route
    FastAPI matches by a pattern of its own, a ``path`` parameter)."""
    if _is_included(candidate):
        return route_depths(candidate.original_router.routes, str(candidate.include_context.prefix))
    if getattr(candidate, "starlette_route", None) is not None:
        return None
    if not isinstance(getattr(candidate, "original_route", None), APIRoute):
        return None
    if any(isinstance(c, PathConvertor) for c in candidate.param_convertors.values()):
        return None
    return frozenset([str(candidate.path_format).count("/")])


def _literal_segments(candidate: Any) -> tuple[str | None, ...] | None:
    """The ``/``-separated segments of the path a FastAPI route's context matches, a
    segment holding a parameter as None; None for any other candidate."""
    if _is_included(candidate) or getattr(candidate, "starlette_route", None) is not None:
        return None
    if not isinstance(getattr(candidate, "original_route", None), APIRoute):
        return None
    return tuple(None if "{" in part else part for part in str(candidate.path_format).split("/"))


# Candidate lists kept per depth, at most (a path's literal segments pick one list).
_MAX_LISTS = 256


class _DepthCandidates:
    """An included router's candidates of one depth: each with its literal segments
    (``_literal_segments``: a candidate of that depth has as many segments as the
    path), the positions where one of them has a literal and the literals there, and the
    lists already picked, by the path's literals at those positions (None: one no
    candidate has)."""

    def __init__(self, every: list[Any], depth: int) -> None:
        self.kept: list[tuple[Any, tuple[str | None, ...] | None]] = []
        for candidate in every:
            depths = path_depths(candidate)
            if depths is None or depth in depths:
                self.kept.append((candidate, _literal_segments(candidate)))
        literals: dict[int, set[str]] = {}
        for _, parts in self.kept:
            for position, part in enumerate(parts or ()):
                if part is not None:
                    literals.setdefault(position, set()).add(part)
        self.positions = tuple(sorted(literals))
        self.literals = tuple(frozenset(literals[position]) for position in self.positions)
        self.every = [candidate for candidate, _ in self.kept]
        # the path's segments at those positions, in C (one position: a string)
        self.pick = itemgetter(*self.positions) if self.positions else None
        self.lists: dict[Any, list[Any]] = {}

    def of(self, parts: list[str]) -> list[Any]:
        if self.pick is None:
            return self.every
        picked = self.pick(parts)
        found = self.lists.get(picked)  # the path's literals all known: kept by them
        if found is not None:
            return found
        one = len(self.positions) == 1
        key = tuple(
            part if part in known else None
            for part, known in zip((picked,) if one else picked, self.literals, strict=True)
        )
        found = self.lists.get(key[0] if one else key)
        if found is None:
            wanted = dict(zip(self.positions, key, strict=True))
            found = [
                candidate
                for candidate, own in self.kept
                if own is None
                or all(part is None or part == wanted[n] for n, part in enumerate(own))
            ]
            if len(self.lists) < _MAX_LISTS:
                self.lists[key[0] if one else key] = found
        return found


def _depth_filtered(included: Any) -> Callable[[Any], Any]:
    """``included._match`` over only the candidates that can match the request's path:
    those of its depth (``path_depths``: a nested router that has routes of it) whose
    literal segments are the path's, and those whose depth is not fixed, in their order.
    A path parameter's text holds no ``/`` (but under the ``path`` convertor), and a
    route's pattern is anchored, so a candidate of another depth, or with another text
    where its path has a literal segment, matches the path neither fully nor partly:
    skipping it changes no answer. FastAPI's own ``_match`` does the matching; only the
    list it walks (``effective_candidates``, read while the cell below is set, which
    ``_match`` never awaits across) is the shorter one. A nested router among the
    candidates (a new one each time FastAPI rebuilds the list) is given the check and
    the filter too."""
    match = included._match  # FastAPI's own, bound
    candidates = included.effective_candidates  # FastAPI's own (or the plain handler's), bound
    wanted: list[list[str] | None] = [None]  # the request path's segments while it is matched
    by_depth: dict[int, _DepthCandidates] = {}
    seen: list[Any] = [None]  # the candidate list the depth lists were built from

    def effective_candidates() -> list[Any]:
        every: list[Any] = candidates()
        if seen[0] is not every:  # FastAPI rebuilt its list: rebuild ours
            by_depth.clear()
            seen[0] = every
            for candidate in every:
                if _is_included(candidate):
                    _give(candidate)
        parts = wanted[0]
        if parts is None:
            return every
        depth = len(parts) - 1
        of_depth = by_depth.get(depth)
        if of_depth is None:
            of_depth = by_depth[depth] = _DepthCandidates(every, depth)
        return of_depth.of(parts)

    def depth_filtered(scope: Any) -> Any:
        wanted[0] = get_route_path(scope).split("/")
        try:
            return match(scope)
        finally:
            wanted[0] = None

    vars(included)["effective_candidates"] = effective_candidates
    return depth_filtered


def _give(included: Any) -> None:
    """Give an included router the check and the depth filter (instance attributes)."""
    if "_match" in vars(included):
        return  # given already
    vars(included)["matches"] = _prefiltered(included)
    vars(included)["_match"] = _depth_filtered(included)


def prefilter_routers(app: FastAPI) -> int:
    """Give each of the app's included routers the check, and the depth filter of its
    routes (and so the routers nested in them, as FastAPI builds them); the number
    given them."""
    given = 0
    for route in app.router.routes:
        if _is_included(route):  # FastAPI's private _IncludedRouter
            _give(route)
            given += 1
    return given

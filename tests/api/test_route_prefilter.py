"""Requests skip the routers that cannot match their path (tidegate.api.route_prefilter):
the same match for every path as FastAPI's own, and no route of another path tried."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi.routing import APIRoute
from starlette.routing import Match
from tests.conftest import AppClient


def _app(client: AppClient) -> Any:
    return client._transport.app  # type: ignore[attr-defined]


def _scope(method: str, path: str) -> dict[str, Any]:
    return {"type": "http", "method": method, "path": path, "root_path": "", "headers": []}


def _formats(routes: list[Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Each route's path format as FastAPI matches it, with the route: those of the
    routers included in the app and in them (their include's prefix first) too."""
    found = []
    for route in routes:
        if hasattr(route, "original_router"):
            inner_prefix = prefix + route.include_context.prefix
            found += _formats(route.original_router.routes, inner_prefix)
        else:
            found.append((prefix + getattr(route, "path_format", "/"), route))
    return found


def _paths(app: Any) -> list[str]:
    """Every operation's path with its parameters filled, with and without a trailing
    slash, and paths no route has."""
    found = {"/", "/nope", "/v1/config/nope", "/v3/pipeline/x/y/z/w", "/v3/pipeline/x/y/z/w/v"}
    # parameters holding what is elsewhere a literal segment
    found |= {"/v3/pipeline/alert/source/alert", "/v3/pipeline/source/alert/source/alert"}
    for path_format, _ in _formats(app.routes):
        path = re.sub(r"\{[^}]*\}", "x", path_format)
        found |= {path, path.rstrip("/") + "/", path.upper()}
    return sorted(found)


def _nested(routes: list[Any]) -> list[Any]:
    """The included routers among ``routes`` (FastAPI's effective candidates of a
    router), and those nested in them."""
    found = []
    for route in routes:
        if hasattr(route, "original_router"):
            found += [route, *_nested(route.effective_candidates())]
    return found


def _included(app: Any) -> list[Any]:
    """The app's included routers and the routers nested in them, as FastAPI matches
    them (the pipeline alerts' router in the pipelines')."""
    return _nested(app.router.routes)


def test_every_router_of_the_app_is_prefiltered(client: AppClient) -> None:
    included = _included(_app(client))
    top = [r for r in _app(client).router.routes if hasattr(r, "original_router")]
    assert len(included) > len(top)  # a nested router: the pipeline alerts'
    assert all("matches" in vars(route) and "_match" in vars(route) for route in included)


@pytest.mark.parametrize("method", ["GET", "POST", "DELETE"])
def test_the_check_changes_no_match(client: AppClient, method: str) -> None:
    app = _app(client)
    for path in _paths(app):
        for route in [*app.router.routes, *_included(app)]:
            prefiltered = route.matches(_scope(method, path))
            own = type(route).matches(route, _scope(method, path))
            assert prefiltered[0] == own[0], (path, route)
            if own[0] != Match.NONE:
                assert prefiltered[1] == own[1], (path, route)


@pytest.mark.parametrize("method", ["GET", "POST", "DELETE"])
def test_the_depth_filter_changes_no_route_chosen(client: AppClient, method: str) -> None:
    """Each router's own choice of route (FastAPI's ``_match``: match, child scope,
    route and route context) is the same over its routes of the path's depth as over
    all of them."""
    app = _app(client)
    included = _included(app)
    assert all("_match" in vars(route) for route in included)
    chosen = 0
    for path in _paths(app):
        for route in included:
            filtered = route._match(_scope(method, path))
            own = type(route)._match(route, _scope(method, path))
            assert filtered[0] == own[0], (path, route)
            assert filtered[2:] == own[2:], (path, route)
            if own[0] != Match.NONE:
                assert filtered[1] == own[1], (path, route)
                chosen += 1
    assert chosen > 100


async def test_a_request_tries_only_routes_its_path_can_match(
    client: AppClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    tried: list[Any] = []
    original = APIRoute.matches

    def counting(self: APIRoute, scope: Any) -> tuple[Match, Any]:
        tried.append(self)
        return original(self, scope)

    monkeypatch.setattr(APIRoute, "matches", counting)
    # each route's path as FastAPI matches it (a nested router's prefix first)
    formats = {id(route): path_format for path_format, route in _formats(_app(client).routes)}
    some = "0123456789abcdef01234567"
    node = f"/v3/pipeline/{some}/source/{some}"
    alerts = node + "/alert"
    alert = f"/v3/pipeline/{some}/alert/{some}"
    # each path's routes tried: only those of its depth and its literal segments, once
    # a walk (FastAPI walks the matching router twice, and the nested one once more)
    expected = {
        # the node's get; before: the live router's tap, then 20 routes of the pipelines'
        node: ["/v3/pipeline/{pipeline_id}/source/{node_id}"] * 2,
        # the component's alerts; before: 24 routes of every depth
        alerts: ["/v3/pipeline/{pipeline_id}/{kind}/{component_id}/alert"] * 3,
        # the alert get; before: 43, the 20 routes of its depth in the pipelines' router
        alert: ["/v3/pipeline/{pipeline_id}/alert/{alert_id}"] * 3,
    }
    for path in ("/v3/pipeline", node, alerts, alerts + f"/{some}", alert, "/v2/export"):
        tried.clear()
        response = await client.get(path)
        assert response.status_code == 401  # no credentials: routed, then refused
        assert tried
        for route in tried:
            path_format = formats[id(route)]
            assert path.startswith(path_format.split("{", 1)[0]), path_format
            assert path_format.count("/") == path.count("/"), path_format
        if path in expected:
            assert [formats[id(route)] for route in tried] == expected[path], tried

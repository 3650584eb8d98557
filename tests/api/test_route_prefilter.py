"""Requests skip the routers that cannot match their path (tidegate.api.route_prefilter):
the same match for every path as FastAPI's own, and no route of another path tried."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi.routing import APIRoute
from starlette.routing import Match
from tests.conftest import AppClient

from tidegate.api.route_prefilter import literal_prefixes


def _app(client: AppClient) -> Any:
    return client._transport.app  # type: ignore[attr-defined]


def _scope(method: str, path: str) -> dict[str, Any]:
    return {"type": "http", "method": method, "path": path, "root_path": "", "headers": []}


def _paths(app: Any) -> list[str]:
    """Every operation's path with its parameters filled, with and without a trailing
    slash, and paths no route has."""
    found = {"/", "/nope", "/v1/config/nope", "/v3/pipeline/x/y/z/w"}
    for route in app.routes:
        for inner in getattr(getattr(route, "original_router", None), "routes", [route]):
            path = re.sub(r"\{[^}]*\}", "x", getattr(inner, "path_format", "/"))
            found |= {path, path.rstrip("/") + "/", path.upper()}
    return sorted(found)


def test_every_router_of_the_app_is_prefiltered(client: AppClient) -> None:
    included = [r for r in _app(client).router.routes if hasattr(r, "original_router")]
    assert included
    assert all("matches" in vars(route) for route in included)


@pytest.mark.parametrize("method", ["GET", "POST", "DELETE"])
def test_the_check_changes_no_match(client: AppClient, method: str) -> None:
    app = _app(client)
    for path in _paths(app):
        for route in app.router.routes:
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
    included = [r for r in app.router.routes if hasattr(r, "original_router")]
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
    tried: list[str] = []
    original = APIRoute.matches

    def counting(self: APIRoute, scope: Any) -> tuple[Match, Any]:
        tried.append(self.path_format)
        return original(self, scope)

    monkeypatch.setattr(APIRoute, "matches", counting)
    node = "/v3/pipeline/0123456789abcdef01234567/source/0123456789abcdef01234567"
    for path in ("/v3/pipeline", node):
        tried.clear()
        response = await client.get(path)
        assert response.status_code == 401  # no credentials: routed, then refused
        assert tried
        for path_format in tried:
            [prefix] = literal_prefixes([_route_of(_app(client), path_format)]) or [""]
            assert path.startswith(prefix), path_format
            assert path_format.count("/") == path.count("/"), path_format
    # the node's get, first of its depth in the pipelines' router, tried once a walk
    # (FastAPI walks the matching router twice); before it, only the live router's tap
    # (the one route of that depth before the pipelines' router): 20 routes before
    assert (
        tried
        == ["/v3/pipeline/{pipeline_id}/tap/{component_id}"]
        + ["/v3/pipeline/{pipeline_id}/source/{node_id}"] * 2
    ), tried


def _route_of(app: Any, path_format: str) -> Any:
    for route in app.router.routes:
        for inner in getattr(getattr(route, "original_router", None), "routes", [route]):
            if getattr(inner, "path_format", None) == path_format:
                return inner
    raise AssertionError(path_format)

"""The reads whose dependencies are all plain answered without FastAPI's general solver.

FastAPI solves a route's dependency tree on every request with machinery made for every
kind of dependency (generators and their exit stacks, security scopes, overrides, sync
functions in a thread, query, header, cookie and body parameters): per node a recursive
call that reads the query string, headers and cookies, and computes the node's cache key
and kind again; per request two exit stacks and the endpoint's error context. A
management read's tree is five nodes (the credential, its two declared header schemes,
the permission, the account) that need none of it, and that machinery was the largest
fixed part of such a read (docs/decisions.md, "The request path").

``install(app)`` gives each GET route whose whole tree is plain (every node an ``async``
function or security scheme taking at most the request, its own dependencies' values and
path parameters; query parameters on the endpoint only; an endpoint annotated to return a
``Response``, a whole body as the raw JSON reads answer, not a stream) a handler
that solves the same tree in the same order with the same per-request cache (by the
dependency's callable, as FastAPI's cache key is for a node without security scopes),
validates the path and query parameters with FastAPI's own function, and calls the endpoint. It
is an instance attribute on the app's own route contexts (FastAPI's handler is kept),
and FastAPI's handler answers instead whenever anything is not plain at request time: a
path parameter that fails validation (FastAPI's 400 follows, from the same solved
credential kept in the request scope) or dependency overrides. Exceptions become answers
through the same handlers at the same place (Starlette's ``wrap_app_handling_exceptions``).
tests/api/test_plain_routes.py compares every such route's answers with FastAPI's own.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, get_type_hints

from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.dependencies.utils import request_params_to_args
from fastapi.routing import APIRoute
from starlette._exception_handler import wrap_app_handling_exceptions
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send


@dataclass(frozen=True, slots=True)
class _Node:
    """A dependency: what it is called with (the request under ``request_names``, its
    own dependencies' values by name, its path parameters) and whether its value is
    shared in the request."""

    call: Callable[..., Awaitable[Any]]
    name: str | None
    use_cache: bool
    request_names: tuple[str, ...]
    dependencies: tuple[_Node, ...]
    path_params: tuple[Any, ...] = ()


def _is_async(call: Any) -> bool:
    if inspect.iscoroutinefunction(call):
        return True
    if inspect.isfunction(call) or inspect.ismethod(call) or inspect.isclass(call):
        return False
    return inspect.iscoroutinefunction(getattr(call, "__call__", None))  # noqa: B004


def _request_names(dependant: Dependant) -> tuple[str, ...]:
    return tuple(
        name
        for name in (dependant.request_param_name, dependant.http_connection_param_name)
        if name is not None
    )


def _takes_only_dependencies(dependant: Dependant, *, query: bool = False) -> bool:
    """Nothing but the request and dependencies (and query parameters if ``query``): no
    header, cookie or body parameter, no response, background tasks, WebSocket or
    security scopes."""
    return not (
        (dependant.query_params and not query)
        or dependant.header_params
        or dependant.cookie_params
        or dependant.body_params
        or dependant.websocket_param_name
        or dependant.response_param_name
        or dependant.background_tasks_param_name
        or dependant.security_scopes_param_name
        or dependant.own_oauth_scopes
        or dependant.parent_oauth_scopes
    )


def _plain_node(dependant: Dependant) -> _Node | None:
    """``dependant`` as a plain node, or None when it or one below it is not plain."""
    call = dependant.call
    if (
        call is None
        or not _takes_only_dependencies(dependant)
        or dependant.concurrency is not None
        or dependant.scope is not None
        or not _is_async(call)
    ):
        return None
    below = _plain_nodes(dependant)
    if below is None:
        return None
    return _Node(call, dependant.name, dependant.use_cache, _request_names(dependant), below,
                 tuple(dependant.path_params))  # fmt: skip


def _plain_nodes(dependant: Dependant) -> tuple[_Node, ...] | None:
    nodes = []
    for sub in dependant.dependencies:
        node = _plain_node(sub)
        if node is None:
            return None
        nodes.append(node)
    return tuple(nodes)


async def _solve(
    nodes: tuple[_Node, ...], request: Request, cache: dict[Any, Any], invalid: list[Any]
) -> dict[str, Any]:
    """FastAPI's order: each dependency's own dependencies first, then its path
    parameters, then its value from the request's cache (when it uses the cache and was
    solved already) or by calling it. A parameter that fails validation is added to
    ``invalid`` and, as FastAPI does, its dependency and those above it are not called
    (the others are: a credential still answers 401 first)."""
    values: dict[str, Any] = {}
    for node in nodes:
        seen = len(invalid)
        arguments = (
            await _solve(node.dependencies, request, cache, invalid) if node.dependencies else {}
        )
        if node.path_params:
            found, errors = request_params_to_args(node.path_params, request.path_params)
            invalid.extend(errors)
            arguments.update(found)
        if len(invalid) > seen:
            continue
        for name in node.request_names:
            arguments[name] = request
        if node.use_cache and node.call in cache:
            solved = cache[node.call]
        else:
            solved = await node.call(**arguments)
        if node.name is not None:
            values[node.name] = solved
        cache.setdefault(node.call, solved)
    return values


def _returns_response(endpoint: Callable[..., Any]) -> bool:
    try:
        returned = get_type_hints(endpoint).get("return")
    except (NameError, TypeError):
        return False
    return returned is Response  # a whole body (the raw JSON reads); streams stay FastAPI's


class PlainHandler:
    """A plain route's handler; ``fastapi_handler`` is FastAPI's own for the route."""

    __slots__ = ("app", "endpoint", "fastapi_handler", "nodes", "path_params", "query_params",
                 "request_names")  # fmt: skip

    def __init__(self, app: FastAPI, dependant: Dependant, nodes: tuple[_Node, ...],
                 fastapi_handler: ASGIApp) -> None:  # fmt: skip
        assert dependant.call is not None
        self.app = app
        self.endpoint: Callable[..., Awaitable[Any]] = dependant.call
        self.nodes = nodes
        self.path_params = dependant.path_params
        self.query_params = dependant.query_params
        self.request_names = _request_names(dependant)
        self.fastapi_handler = fastapi_handler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.app.dependency_overrides:
            await self.fastapi_handler(scope, receive, send)
            return
        request = Request(scope, receive, send)

        async def answer(scope: Scope, receive: Receive, send: Send) -> None:
            invalid: list[Any] = []
            values = await _solve(self.nodes, request, {}, invalid)
            found, errors = request_params_to_args(self.path_params, request.path_params)
            errors = invalid + errors
            if self.query_params and not errors:
                query, errors = request_params_to_args(self.query_params, request.query_params)
                found.update(query)
            if errors:  # FastAPI's handler answers (the solved credential is kept)
                await self.fastapi_handler(scope, receive, send)
                return
            values.update(found)
            for name in self.request_names:
                values[name] = request
            response = await self.endpoint(**values)
            if not isinstance(response, Response):
                raise TypeError(f"{self.endpoint.__qualname__} must return a Response")
            await response(scope, receive, send)

        await wrap_app_handling_exceptions(answer, request)(scope, receive, send)


def plain_handler(context: Any, app: FastAPI) -> PlainHandler | None:
    """The handler for one route context, or None when its route is not plain."""
    route = getattr(context, "original_route", context)  # an included route's, or its own
    dependant: Dependant | None = getattr(context, "dependant", None)
    if (
        not isinstance(route, APIRoute)
        or dependant is None
        or dependant.call is None
        or set(context.methods or ()) - {"GET", "HEAD"}
        or getattr(context, "body_field", None) is not None
        or getattr(context, "max_body_size", None) is not None
        or context.app is None
        or not inspect.iscoroutinefunction(dependant.call)
        or not _takes_only_dependencies(dependant, query=True)
        or not _returns_response(dependant.call)
    ):
        return None
    nodes = _plain_nodes(dependant)
    if not nodes:  # not plain, or nothing to solve (nothing to save either)
        return None
    return PlainHandler(app, dependant, nodes, context.app)


def route_contexts(app: FastAPI) -> Iterator[Any]:
    """Each route as FastAPI serves it: an included router's routes as their contexts
    (the router's dependencies added), a route of the app's own as itself."""
    for route in app.router.routes:
        if hasattr(route, "effective_route_contexts"):
            yield from route.effective_route_contexts()
        else:
            yield route


def install(app: FastAPI) -> None:
    """Give every plain GET route of ``app`` the plain handler: the app's own routes at
    once, an included router's routes when FastAPI builds their contexts (lazily: at
    the router's first request, or when anything walks its routes, such as the OpenAPI
    document). Building a context solves its route's signature and parameters again
    (pydantic adapters for each), about 3.5 ms a route here: built for every route at
    start, it was most of a second of each server's start, spent on routers a process
    may never serve (docs/testing.md, "Where the time goes")."""
    for route in app.router.routes:
        if hasattr(route, "effective_candidates") and hasattr(route, "original_router"):
            _install_when_built(route, app)
        else:
            _give(route, app)


def _give(context: Any, app: FastAPI) -> None:
    if isinstance(getattr(context, "app", None), PlainHandler):
        return  # given already (a list of the same contexts seen again)
    handler = plain_handler(context, app)
    if handler is not None:
        context.app = handler


def _install_when_built(included: Any, app: FastAPI) -> None:
    """Wraps an included router's ``effective_candidates`` (an instance attribute, like
    the route prefilter's) so that each list of contexts it answers has had the plain
    handler given to its routes before anything matches against it."""
    build = included.effective_candidates  # FastAPI's own, or the prefilter's: bound
    seen: list[Any] = [None]  # the list last given (FastAPI keeps answering it)

    def effective_candidates() -> list[Any]:
        candidates: list[Any] = build()
        if candidates is not seen[0]:
            for candidate in candidates:
                if hasattr(candidate, "effective_candidates"):
                    _install_when_built(candidate, app)  # a nested router (none here)
                else:
                    _give(candidate, app)
            seen[0] = candidates
        return candidates

    vars(included)["effective_candidates"] = effective_candidates

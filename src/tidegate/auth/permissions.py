"""The permission each endpoint needs, as a FastAPI dependency.

Every authenticated route declares what it needs, either on the route
(``dependencies=[requires(Permission.MANAGE)]``) or for a whole router by method
(``by_method(read=Permission.READ, write=Permission.CONTENT)``). tests/auth/
test_role_matrix.py fails for a route that declares nothing.

A module apart from ``roles``: the credential checks (``dependencies``) need the roles,
and these permission checks need the credential checks.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from fastapi import Depends, Request
from fastapi.params import Depends as DependsParam

from tidegate.auth.dependencies import current_session, principal_of
from tidegate.auth.roles import Permission

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

PERMISSION_ATTRIBUTE = "__tidegate_permission__"

_cache: dict[tuple[Permission, Permission | None], DependsParam] = {}


def _dependency(read: Permission, write: Permission | None) -> DependsParam:
    """One dependency object per (read, write), so FastAPI solves each once."""
    found = _cache.get((read, write))
    if found is not None:
        return found

    async def check(request: Request) -> None:
        needed = read if write is None or request.method in _SAFE_METHODS else write
        (await principal_of(request)).require(needed)

    declared = {"read": read, "write": write or read}
    setattr(check, PERMISSION_ATTRIBUTE, declared)
    check.__name__ = f"requires_{read.value}" + (f"_writes_{write.value}" if write else "")
    dependency: DependsParam = Depends(check)
    _cache[(read, write)] = dependency
    return dependency


def requires(permission: Permission) -> DependsParam:
    """The route needs ``permission`` whatever its method."""
    return _dependency(permission, None)


def by_method(*, read: Permission, write: Permission) -> DependsParam:
    """For a whole router: GET/HEAD need ``read``, every other method ``write``."""
    return _dependency(read, write)


def declared_permission(
    call: Callable[..., Awaitable[Any]] | Any, method: str
) -> Permission | None:
    """What a dependency made here declares for ``method`` (None: not one of ours)."""
    declared = getattr(call, PERMISSION_ATTRIBUTE, None)
    if declared is None:
        return None
    permission: Permission = declared["read" if method in _SAFE_METHODS else "write"]
    return permission


def _calls(dependant: Any) -> Iterator[Any]:
    for child in getattr(dependant, "dependencies", None) or ():
        yield child.call
        yield from _calls(child)


def route_permissions(app: Any) -> Iterator[tuple[str, str, Permission | None, bool]]:
    """Every operation of ``app`` as ``(method, path, declared permission, whether it
    needs credentials)``. FastAPI keeps included routers as a tree of effective route
    contexts; this walks it (the one place that knows how)."""

    def walk(routes: Any) -> Iterator[Any]:
        for route in routes:
            if hasattr(route, "effective_route_contexts"):
                yield from route.effective_route_contexts()
            else:
                yield route

    for route in walk(app.routes):
        dependant = getattr(route, "dependant", None)
        if dependant is None:
            continue
        calls = list(_calls(dependant))
        needs_credentials = any(
            call is principal_of
            or getattr(call, "__name__", "") in ("authenticate", "authenticate_export")
            for call in calls
        )
        # The session's own endpoints (switch account, sign out) take the cookie itself.
        session_only = any(call is current_session for call in calls)
        # WebSocket routes have no method; they are listed so that a test can see them.
        methods = getattr(route, "methods", None) or (
            {"WEBSOCKET"}
            if type(getattr(route, "original_route", route)).__name__.endswith("WebSocketRoute")
            else set()
        )
        for method in sorted(methods):
            declared = [p for call in calls if (p := declared_permission(call, method))]
            permission = declared[-1] if declared else None
            if permission is None and session_only:
                permission = Permission.SIGNED_IN
            yield method, route.path, permission, needs_credentials or session_only

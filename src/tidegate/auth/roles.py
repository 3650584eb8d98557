"""Roles and the permission each endpoint needs.

A person's role is per account (their membership). Keys act with a fixed role:
service keys and enterprise keys act as the account's owner (docs/people.md, "Roles":
the platform's keys have the account's full access, and its Terraform provider manages
every resource with them).

Every authenticated route declares what it needs, either on the route
(``dependencies=[requires(Permission.MANAGE)]``) or for a whole router by method
(``by_method(read=Permission.READ, write=Permission.CONTENT)``). tests/auth/
test_role_matrix.py fails for a route that declares nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from enum import IntEnum, StrEnum
from typing import Any

from fastapi import Depends, Request
from fastapi.params import Depends as DependsParam


class Role(IntEnum):
    """Ordered: each role may do everything the ones below it may."""

    READONLY = 1
    MEMBER = 2
    ADMIN = 3
    OWNER = 4

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Role:
        return cls[text.upper()]


ROLE_NAMES = tuple(role.label for role in Role)


class Permission(StrEnum):
    # Reads of logs (export, aggregate, tail) and of configuration.
    READ = "read"
    # Changes to views, boards, alerts and categories.
    CONTENT = "content"
    # Changes to keys, exclusion rules, pipelines, members and groups.
    MANAGE = "manage"
    # Account settings: suspending ingestion, deleting the account.
    OWN = "own"
    # The enterprise itself (an enterprise key not acting as an account).
    ENTERPRISE = "enterprise"
    # Any valid credential (who am I, the CLI's account list).
    SIGNED_IN = "signed-in"


MINIMUM_ROLE: dict[Permission, Role] = {
    Permission.READ: Role.READONLY,
    Permission.CONTENT: Role.MEMBER,
    Permission.MANAGE: Role.ADMIN,
    Permission.OWN: Role.OWNER,
}

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

PERMISSION_ATTRIBUTE = "__tidegate_permission__"

_cache: dict[tuple[Permission, Permission | None], DependsParam] = {}


def _dependency(read: Permission, write: Permission | None) -> DependsParam:
    """One dependency object per (read, write), so FastAPI solves each once."""
    found = _cache.get((read, write))
    if found is not None:
        return found
    # Imported here: the dependency module imports this one for the Principal's checks.
    from tidegate.auth.dependencies import principal_of

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
    from tidegate.auth.dependencies import current_session, principal_of

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

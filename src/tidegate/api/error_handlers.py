"""The one place where errors become responses."""

from __future__ import annotations

import logging
import sqlite3

import asyncpg  # type: ignore[import-untyped]
import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route

from tidegate import metrics
from tidegate.api.validation import translate
from tidegate.errors import (
    ApiError,
    MalformedJson,
    ServiceUnavailable,
    ValidationFailed,
    error_for_status,
)
from tidegate.types import ApiFamily

log = logging.getLogger("tidegate.errors")


def family_of(path: str) -> ApiFamily:
    return "v3" if path == "/v3" or path.startswith("/v3/") else "legacy"


def render(error: ApiError, path: str) -> Response:
    body = error.v3_body() if family_of(path) == "v3" else error.legacy_body()
    return Response(
        orjson.dumps(body),
        status_code=error.status,
        headers=error.headers or None,
        media_type="application/json",
    )


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return render(exc, request.url.path)


async def _validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    raw = list(exc.errors())
    if any(err.get("type") == "json_invalid" for err in raw):
        detail = next(err for err in raw if err.get("type") == "json_invalid")
        reason = (detail.get("ctx") or {}).get("error", "invalid JSON")
        return render(
            MalformedJson(f"Request body is not valid JSON: {reason}", context="body"),
            request.url.path,
        )
    context, items = translate(raw)
    message = items[0].message if items else "Request failed validation"
    if items and items[0].instance_path:
        message = f"{context}{items[0].instance_path.replace('/', '.')} {message}"
    elif items:
        message = f"{context} {message}"
    return render(ValidationFailed(message, context=context, errors=items), request.url.path)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    detail = exc.detail if isinstance(exc.detail, str) else None
    if exc.status_code == 404:
        detail = f"No route for {request.method} {request.url.path}"
    error = error_for_status(exc.status_code, detail)
    if exc.headers:
        error.headers = dict(exc.headers)
    if exc.status_code == 405:
        # Starlette names only the first matching route's methods; a path served by
        # several routes (GET and POST on one collection) must list them all.
        error.headers["Allow"] = ", ".join(_allowed_methods(request))
    return render(error, request.url.path)


def _allowed_methods(request: Request) -> list[str]:
    methods: set[str] = set()
    for route in request.app.router.routes:
        if isinstance(route, Route) and route.methods and route.path_regex.match(request.url.path):
            methods |= route.methods
    return sorted(methods)


# What a database that cannot serve right now raises, through SQLAlchemy or straight
# from the driver (connecting happens outside SQLAlchemy's error translation).
_UNAVAILABLE: tuple[type[BaseException], ...] = (
    OperationalError,  # SQLite locked past busy_timeout, a connection refused or lost
    InterfaceError,  # the driver's connection is closed
    PoolTimeout,  # every pooled connection busy for pool_timeout
    OSError,  # connection refused/reset, timeouts (TimeoutError is an OSError)
    sqlite3.OperationalError,  # the raw reader (db.engine.Database.fetch)
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    asyncpg.CannotConnectNowError,  # starting up or shutting down
    asyncpg.InvalidCatalogNameError,  # the database is gone
    asyncpg.OperatorInterventionError,  # terminated by an administrator, shutdown
    asyncpg.QueryCanceledError,  # statement_timeout
    asyncpg.InsufficientResourcesError,  # too many connections, disk full
)


def store_unavailable(error: BaseException) -> bool:
    """Whether ``error`` (or what it wraps) means the database cannot serve now."""
    seen: BaseException | None = error
    for _ in range(5):
        if seen is None:
            return False
        if isinstance(seen, _UNAVAILABLE):
            return True
        if isinstance(seen, DBAPIError):
            if seen.connection_invalidated:
                return True
            seen = seen.orig if seen.orig is not None else seen.__cause__
        else:
            seen = seen.__cause__
    return False


async def _database_error(request: Request, exc: Exception) -> Response:
    """A database outage or overload is a 503 with Retry-After on every path (clients
    of the platform retry those), never a 500."""
    if not store_unavailable(exc):
        return await _unexpected(request, exc)
    metrics.DB_UNAVAILABLE.inc()
    log.warning(
        "database unavailable on %s %s: %s", request.method, request.url.path, type(exc).__name__
    )
    error = ServiceUnavailable(
        "The database is unavailable; retry shortly", headers={"Retry-After": "1"}
    )
    return render(error, request.url.path)


async def _unexpected(request: Request, exc: Exception) -> Response:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return render(ApiError(), request.url.path)


def install(app: FastAPI) -> None:
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    for database_error in (DBAPIError, PoolTimeout, OSError, *_UNAVAILABLE):
        app.add_exception_handler(database_error, _database_error)
    app.add_exception_handler(Exception, _unexpected)

"""The authentication dependency every management route sits behind.

It never touches the request's session: the credential is read through the read engine
and the rate limiter asked before any transaction is opened, so a slow limiter can never
hold SQLite's write lock (or a PostgreSQL transaction) while it waits. FastAPI solves it
once per request however many dependencies name it.
"""

from __future__ import annotations

import base64
import binascii
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import APIKeyHeader, APIKeyQuery

from tidegate.app_state import app_state
from tidegate.auth import repository
from tidegate.auth.principal import Principal
from tidegate.auth.secrets import Sealer, hash_secret, same_secret
from tidegate.errors import Forbidden, RateLimited, Unauthorized
from tidegate.ratelimit import retry_after_header

MANAGEMENT_DOMAIN = "tidegate:management-key"
INGESTION_DOMAIN = "tidegate:ingestion-key"

# Declared as security schemes so the OpenAPI document describes them; parsed by hand
# below because the platform's "Token <key>" form is not a standard scheme.
_token_header = APIKeyHeader(
    name="Authorization", auto_error=False, description="`Token <key>`", scheme_name="token"
)
_servicekey_header = APIKeyHeader(
    name="servicekey",
    auto_error=False,
    description="legacy: the bare key",
    scheme_name="servicekey",
)


def _basic_user(value: str) -> str | None:
    """The user name of HTTP Basic credentials (the platform's key-as-user-name form)."""
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return decoded.partition(":")[0].strip() or None


def _presented_key(request: Request) -> str | None:
    """The key of the request, in the platform's documented forms: ``Authorization:
    Token <key>``, HTTP Basic with the key as user name, a ``servicekey`` or ``apikey``
    header; and, on the exports only (``authenticate_export``), a ``servicekey`` query
    parameter, which the platform's CLI sends. An Authorization header of another
    scheme is no credential, whatever else is sent."""
    headers = request.headers
    authorization = headers.get("authorization")
    if authorization:
        scheme, _, value = authorization.strip().partition(" ")
        if scheme.lower() == "token" and value.strip():
            return value.strip()
        if scheme.lower() == "basic" and value.strip():
            return _basic_user(value)
        return None
    for name in ("servicekey", "apikey"):
        if value := (headers.get(name) or "").strip():
            return value
    if request.scope.get(_QUERY_KEY_ALLOWED):
        return (request.query_params.get("servicekey") or "").strip() or None
    return None


# Where the request's principal is kept once resolved (one credential read, one rate
# limit count per request, whichever dependency asks first).
_PRINCIPAL = "tidegate.principal"
# Set by ``authenticate_export``: the request may carry its key in the query string.
_QUERY_KEY_ALLOWED = "tidegate.query_key_allowed"


async def principal_of(request: Request) -> Principal:
    """The request's principal, resolved on first use and kept in the request scope."""
    principal: Principal | None = request.scope.get(_PRINCIPAL)
    if principal is None:
        principal = await _resolve(request)
        request.scope[_PRINCIPAL] = principal
    return principal


async def authenticate(
    request: Request,
    # Declared for the OpenAPI document's security schemes; the headers are read in
    # _resolve, so that dependencies needing the principal ask for the request only
    # (every Depends node is solved on every request, cached or not).
    authorization: Annotated[str | None, Depends(_token_header)],
    servicekey: Annotated[str | None, Depends(_servicekey_header)],
) -> Principal:
    return await principal_of(request)


async def _resolve(request: Request) -> Principal:
    headers = request.headers
    secret = _presented_key(request)
    if secret is None:
        raise Unauthorized("Missing credentials: send Authorization: Token <key>")
    key_hash = hash_secret(secret, domain=MANAGEMENT_DOMAIN)
    state = app_state(request)
    key = await repository.key_by_hash(db=state.db, key_hash=key_hash)
    if key is None or not same_secret(key.key_hash, key_hash):
        raise Unauthorized("Invalid credentials")
    wait = await state.limiter.retry_after(key.id)
    if wait is not None:
        raise RateLimited(headers={"Retry-After": retry_after_header(wait)})

    if key.kind == "service":
        if (
            key.account_id is None
            or key.account_enterprise_id is None
            or key.account_status == "deactivated"
        ):
            raise Forbidden("Account not found or inactive")
        return Principal(key.id, "service", key.account_enterprise_id, key.account_id)
    if key.kind != "enterprise" or key.enterprise_id is None:
        raise Forbidden("This key cannot be used on the management API")

    delegate = headers.get("x-delegate-account-id")
    if delegate is None:
        return Principal(key.id, "enterprise", key.enterprise_id, None)
    target = await repository.child_account_id(
        db=state.db, enterprise_id=key.enterprise_id, account_id=delegate.strip()
    )
    if target is None:
        raise Forbidden("x-delegate-account-id names no account of this enterprise")
    return Principal(key.id, "enterprise", key.enterprise_id, target)


_servicekey_query = APIKeyQuery(
    name="servicekey",
    auto_error=False,
    description="exports only: the key in the query string (the platform's CLI sends it)",
    scheme_name="servicekey_query",
)


async def authenticate_export(
    request: Request,
    authorization: Annotated[str | None, Depends(_token_header)],
    servicekey: Annotated[str | None, Depends(_servicekey_header)],
    servicekey_query: Annotated[str | None, Depends(_servicekey_query)],
) -> Principal:
    """``authenticate`` for the exports, which also take the key as ``?servicekey=``
    (kept to them: a key in a URL ends up in access logs and browser history)."""
    request.scope[_QUERY_KEY_ALLOWED] = True
    return await principal_of(request)


CurrentPrincipal = Annotated[Principal, Depends(principal_of)]


async def require_enterprise(request: Request) -> str:
    return (await principal_of(request)).enterprise()


async def require_account(request: Request) -> str:
    return (await principal_of(request)).account()


EnterpriseId = Annotated[str, Depends(require_enterprise)]
AccountId = Annotated[str, Depends(require_account)]


def _sealer(request: Request) -> Sealer:
    return app_state(request).sealer


# The server's sealer, for endpoints that store secrets they must read back.
SealerDep = Annotated[Sealer, Depends(_sealer)]

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
from starlette.requests import HTTPConnection

from tidegate.app_state import app_state
from tidegate.auth import repository, signed_query
from tidegate.auth.principal import Principal
from tidegate.auth.roles import Role
from tidegate.auth.scope import AccessScope
from tidegate.auth.secrets import (
    MANAGEMENT_DOMAIN,
    Sealer,
    hash_secret,
    same_secret,
)
from tidegate.clock import now_ms
from tidegate.errors import Forbidden, RateLimited, Unauthorized
from tidegate.ratelimit import retry_after_header

SESSION_DOMAIN = "tidegate:session"
CSRF_DOMAIN = "tidegate:csrf"

SESSION_COOKIE = "tidegate_session"
CSRF_COOKIE = "tidegate_csrf"
CSRF_HEADER = "x-csrf-token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# A session's last activity is written at most this often (idle timeout precision).
TOUCH_INTERVAL_MS = 60_000

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


def _presented_key(request: HTTPConnection) -> str | None:
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


async def principal_of(request: HTTPConnection) -> Principal:
    """The request's principal, resolved on first use and kept in the request scope.
    Also of a WebSocket (``/ws/tail``), whose handshake is authenticated the same way."""
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


async def _resolve(request: HTTPConnection) -> Principal:
    """The first credential form present decides: a key in a header, else the session
    cookie, else a logdna-cli signed query (docs/people.md, "Credentials")."""
    headers = request.headers
    state = app_state(request)
    secret = _presented_key(request)
    if secret is not None:
        key_hash = hash_secret(secret, domain=MANAGEMENT_DOMAIN)
        key = await repository.key_by_hash(db=state.db, key_hash=key_hash)
        if key is None or not same_secret(key.key_hash, key_hash):
            raise Unauthorized("Invalid credentials")
        await _rate_limit(request, key.id)
        return await key_principal(
            request, key=key, account_id=headers.get("x-delegate-account-id"), delegated=True
        )
    cookie = request.cookies.get(SESSION_COOKIE)
    # Not on a WebSocket: a browser sends its cookies with a handshake from any origin
    # (live tail over WebSocket takes the CLIs' credentials; the web app uses SSE).
    if cookie and isinstance(request, Request):
        return await _session_principal(request, cookie)
    if "hmac" in request.query_params:
        return await _signed_principal(request)
    raise Unauthorized("Missing credentials: send Authorization: Token <key>")


async def _rate_limit(request: HTTPConnection, limit_key: str, *, browser: bool = False) -> None:
    """A key or a signed query counts against the scripts' budget (50 a minute by
    default, as the platform documents); a signed-in browser session against the
    person's own (``session_rate_limit_per_minute``), under its own names, so a page's
    several calls per search never use up the key's budget and a script cannot use up
    the person's."""
    state = app_state(request)
    if browser:
        wait = await state.session_limiter.retry_after(f"web:{limit_key}")
    else:
        wait = await state.limiter.retry_after(limit_key)
    if wait is not None:
        raise RateLimited(headers={"Retry-After": retry_after_header(wait)})


async def key_principal(
    request: HTTPConnection,
    *,
    key: repository.KeyRecord,
    account_id: str | None,
    delegated: bool,
    session_id: str | None = None,
) -> Principal:
    """A service key acts as its own account; an enterprise key as itself, or as one of
    its enterprise's accounts (``x-delegate-account-id``, or a key session's choice)."""
    if key.kind == "service":
        if (
            key.account_id is None
            or key.account_enterprise_id is None
            or key.account_status == "deactivated"
        ):
            raise Forbidden("Account not found or inactive")
        if key.made_by is None:
            return Principal(
                key.id, "service", key.account_enterprise_id, key.account_id, session_id=session_id
            )
        # At most the role and scope its maker has now (docs/isolation.md).
        role = await _maker_role(request, user_id=key.made_by, account_id=key.account_id)
        return Principal(
            key.id,
            "service",
            key.account_enterprise_id,
            key.account_id,
            role=role,
            session_id=session_id,
            scope=await _scope_of(request, user_id=key.made_by, account_id=key.account_id),
            maker_id=key.made_by,
        )
    if key.kind != "enterprise" or key.enterprise_id is None:
        raise Forbidden("This key cannot be used on the management API")
    if account_id is None:
        return Principal(key.id, "enterprise", key.enterprise_id, None, session_id=session_id)
    target = await repository.child_account_id(
        db=app_state(request).db, enterprise_id=key.enterprise_id, account_id=account_id.strip()
    )
    if target is None:
        where = "x-delegate-account-id" if delegated else "The session's account"
        raise Forbidden(f"{where} names no account of this enterprise")
    return Principal(key.id, "enterprise", key.enterprise_id, target, session_id=session_id)


async def user_principal(
    request: HTTPConnection, *, user_id: str, account_id: str | None, session_id: str | None = None
) -> Principal:
    """A person acting in one of their accounts, with their role and groups' scope."""
    db = app_state(request).db
    if account_id is None:
        raise Forbidden("Choose an account first: PUT /v1/auth/session/account")
    found = await repository.member(db=db, user_id=user_id, account_id=account_id)
    if found is None:
        raise Unauthorized("The user no longer exists")
    if found.role is None or found.account_enterprise_id is None:
        raise Forbidden("You are not a member of this account")
    if found.account_status == "deactivated":
        raise Forbidden("Account not found or inactive")
    await _rate_limit(request, f"user:{user_id}", browser=session_id is not None)
    return Principal(
        None,
        "user",
        found.account_enterprise_id,
        account_id,
        role=Role.parse(found.role),
        user_id=user_id,
        email=found.email,
        session_id=session_id,
        scope=await _scope_of(request, user_id=user_id, account_id=account_id),
    )


async def _scope_of(
    request: HTTPConnection, *, user_id: str, account_id: str
) -> AccessScope | None:
    return await repository.access_scope(
        db=app_state(request).db, user_id=user_id, account_id=account_id
    )


async def _maker_role(request: HTTPConnection, *, user_id: str, account_id: str) -> Role:
    """The current role of a key's maker in the key's account; a maker who left it (or
    was deleted) leaves the key with no role at all."""
    found = await repository.member(
        db=app_state(request).db, user_id=user_id, account_id=account_id
    )
    if found is None or found.role is None:
        raise Forbidden(
            "The person who made this key is no longer a member of its account; "
            "the key acts with its maker's role"
        )
    return Role.parse(found.role)


async def current_session(request: Request) -> repository.SessionRecord:
    """The request's browser session, alive and (for unsafe methods) CSRF-checked;
    its last activity recorded at most once a minute."""
    cookie = request.cookies.get(SESSION_COOKIE)
    if not cookie:
        raise Unauthorized("Not signed in")
    state = app_state(request)
    found = await repository.session_by_hash(
        db=state.db, token_hash=hash_secret(cookie, domain=SESSION_DOMAIN)
    )
    if found is None:
        raise Unauthorized("The session has ended; sign in again")
    now = now_ms()
    idle_ms = state.settings.session_idle_s * 1000
    if now >= found.expires_ms or now - found.last_seen_ms >= idle_ms:
        state.session_activity.end(found.id)
        raise Unauthorized("The session has expired; sign in again")
    if request.scope["type"] == "websocket":
        # A WebSocket handshake carries no CSRF header; a page of another origin must
        # not open one with the person's cookie (SameSite=Lax covers modern browsers).
        _same_origin(request)
    elif request.scope.get("method", "GET") not in SAFE_METHODS:
        presented = request.headers.get(CSRF_HEADER, "")
        cookie_csrf = request.cookies.get(CSRF_COOKIE, "")
        if not (
            presented
            and same_secret(presented, cookie_csrf)
            and same_secret(hash_secret(presented, domain=CSRF_DOMAIN), found.csrf_hash)
        ):
            raise Forbidden(
                f"A signed-in browser must send {CSRF_HEADER} (the {CSRF_COOKIE} cookie)"
            )
    if now - found.last_seen_ms >= TOUCH_INTERVAL_MS:
        # Beside the request, never in it: a read must not wait for the write lock.
        state.session_activity.touch(found.id, now)
    return found


def _same_origin(request: Request) -> None:
    origin = request.headers.get("origin")
    if origin is None:
        return  # not a browser
    allowed = {
        app_state(request).settings.public_url.rstrip("/").lower(),
        f"http://{request.headers.get('host', '')}".lower(),
        f"https://{request.headers.get('host', '')}".lower(),
    }
    if origin.rstrip("/").lower() not in allowed:
        raise Forbidden("A signed-in browser may open this only from tidegate's own pages")


async def _session_principal(request: Request, cookie: str) -> Principal:
    found = await current_session(request)
    if found.key_id is not None:
        key = await repository.key_by_id(db=app_state(request).db, key_id=found.key_id)
        if key is None:
            raise Unauthorized("The key this session signed in with was deleted")
        await _rate_limit(request, f"key:{key.id}", browser=True)
        return await key_principal(
            request, key=key, account_id=found.account_id, delegated=False, session_id=found.id
        )
    assert found.user_id is not None
    return await user_principal(
        request, user_id=found.user_id, account_id=found.account_id, session_id=found.id
    )


async def _signed_principal(request: HTTPConnection) -> Principal:
    """logdna-cli's signed query (tidegate.auth.signed_query)."""
    query = request.query_params
    state = app_state(request)
    email, account_id = query.get("email", ""), query.get("id", "")
    ts, presented = query.get("ts", ""), query.get("hmac", "")
    if not account_id or not presented:
        raise Unauthorized("A signed query needs id, ts and hmac")
    if signed_query.fresh(ts, window_s=state.settings.signed_query_window_s) is None:
        raise Unauthorized("The signature's ts is missing or too far from the server's clock")
    text = signed_query.signed_text(email=email, account_id=account_id, ts=ts)
    if email:
        found = await repository.user_by_email(db=state.db, email=email.strip().lower())
        candidates = [found] if found is not None else []
    else:
        candidates = await repository.signers_of_account(db=state.db, account_id=account_id)
    signer = None
    for candidate in candidates:
        token = state.sealer.open(candidate.cli_token_sealed or "")
        if token and signed_query.same_signature(token, text, presented):
            signer = candidate
            break
    if signer is None:
        raise Unauthorized("Invalid signature")
    window = state.settings.signed_query_window_s
    if not await state.replay.first_use(presented.lower(), window_s=window):
        raise Unauthorized("This signature was already used; sign the query again")
    return await user_principal(request, user_id=signer.id, account_id=account_id)


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
    accept_query_key(request)
    return await principal_of(request)


def accept_query_key(connection: HTTPConnection) -> None:
    """Let this request (an export) or WebSocket (live tail) carry its key as
    ``?servicekey=``, as the platform's CLI sends it; a credential header still wins."""
    connection.scope[_QUERY_KEY_ALLOWED] = True


CurrentPrincipal = Annotated[Principal, Depends(principal_of)]


async def require_enterprise(request: Request) -> str:
    return (await principal_of(request)).enterprise()


async def require_account(request: Request) -> str:
    return (await principal_of(request)).account()


async def person_made_by(request: Request) -> str | None:
    return (await principal_of(request)).person_id


EnterpriseId = Annotated[str, Depends(require_enterprise)]
AccountId = Annotated[str, Depends(require_account)]
# Who answers for what the request makes (a key's, a view's, a preset's made_by).
MadeBy = Annotated[str | None, Depends(person_made_by)]


def _sealer(request: Request) -> Sealer:
    return app_state(request).sealer


# The server's sealer, for endpoints that store secrets they must read back.
SealerDep = Annotated[Sealer, Depends(_sealer)]

"""HTTP for ingestion (``POST /logs/ingest``, outside the management router: ingestion
keys only) and usage (``GET /v1/usage``, a management endpoint)."""

from __future__ import annotations

import base64
import binascii
import functools
from collections.abc import Callable, Coroutine
from typing import Annotated, Any

from fastapi import APIRouter, BackgroundTasks, Depends, Query, Request, Response
from fastapi.routing import APIRoute
from fastapi.security import APIKeyHeader, APIKeyQuery, HTTPAuthorizationCredentials
from fastapi.security.http import HTTPBase

from tidegate.api.error_models import LegacyError, error_response
from tidegate.app_state import app_state
from tidegate.clock import now_ms
from tidegate.errors import Unauthorized
from tidegate.ingest import schemas, service
from tidegate.ingest.decoding import MAX_LINES_PER_REQUEST

router = APIRouter(tags=["Ingestion"])

# Declared so the OpenAPI document shows the three credential forms; read by hand below
# (Basic carries the key as the user name, which no standard scheme parser returns).
_basic = HTTPBase(
    scheme="basic", auto_error=False, description="The ingestion key as the user name"
)
_apikey_header = APIKeyHeader(name="apikey", auto_error=False, scheme_name="apikey_header")
_apikey_query = APIKeyQuery(name="apikey", auto_error=False, scheme_name="apikey_query")


def _basic_user(credentials: HTTPAuthorizationCredentials | None) -> str | None:
    if credentials is None or credentials.scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(credentials.credentials, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    user, _, password = decoded.partition(":")
    return user.strip() or password.strip() or None


async def ingestion_key(
    basic: Annotated[HTTPAuthorizationCredentials | None, Depends(_basic)],
    header: Annotated[str | None, Depends(_apikey_header)],
    query: Annotated[str | None, Depends(_apikey_query)],
) -> str:
    key = _basic_user(basic) or (header or "").strip() or (query or "").strip()
    if not key:
        raise Unauthorized("Missing Credentials")
    return key


def _error(description: str) -> dict[str, Any]:
    return error_response(LegacyError, description)


def _inline_defs(schema: Any, defs: dict[str, Any]) -> Any:
    """The model's JSON Schema with its ``$defs`` references inlined (the body is read
    by hand, so FastAPI does not register the model among the document's components)."""
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return _inline_defs(defs[ref.removeprefix("#/$defs/")], defs)
        return {key: _inline_defs(value, defs) for key, value in schema.items() if key != "$defs"}
    if isinstance(schema, list):
        return [_inline_defs(item, defs) for item in schema]
    return schema


_body_schema = schemas.IngestBody.model_json_schema()
_INGEST_BODY = {
    "content": {
        "application/json": {"schema": _inline_defs(_body_schema, _body_schema.get("$defs", {}))}
    },
    "required": True,
    "description": (
        '`{"lines": [...]}` or `{"e": "ls", "ls": [...]}`; may be sent with '
        "`Content-Encoding: gzip` (at most 10 MB on the wire and 10 MB decompressed, "
        f"at most {MAX_LINES_PER_REQUEST} lines)."
    ),
}


_INGEST_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: _error(
        '`{"error":"Missing param hostname."}` or `{"error":"Bad or missing parameters. ..."}`: '
        "a body that is not the protocol (not JSON, no lines array), a bad parameter. One "
        "odd line is never a 400: it is repaired and counted in usage (`lines_fallback`)"
    ),
    401: _error('`{"error":"Missing Credentials"}`: no ingestion key sent'),
    403: _error(
        '`{"error":"Account not found or inactive"}`: unknown or deleted key, deactivated account'
    ),
    413: _error(
        f"Body over 10 MB, on the wire or decompressed, or over {MAX_LINES_PER_REQUEST} lines"
    ),
    415: _error("Unsupported Content-Encoding"),
    503: _error("Too much work in flight or the store is busy: retry after `Retry-After`"),
}


async def ingest(
    request: Request,
    background: BackgroundTasks,
    key: Annotated[str, Depends(ingestion_key)],
    hostname: Annotated[
        str | None, Query(description="Required: the host the lines come from")
    ] = None,
    mac: Annotated[str | None, Query(description="MAC address of the host")] = None,
    ip: Annotated[str | None, Query(description="IP address of the host")] = None,
    now: Annotated[
        str | None,
        Query(
            description=(
                "The client's current time, epoch seconds or milliseconds: sets the time of "
                "lines without one and corrects the lines' times when the client's clock "
                "is more than a minute off"
            )
        ),
    ] = None,
    tags: Annotated[
        list[str] | None, Query(description="Comma-separated tags (the parameter may repeat)")
    ] = None,
) -> schemas.IngestOk:
    state = app_state(request)
    runtime = state.ingest
    intake = state.intake
    with runtime.limit.slot():
        # Credentials first: the body is read only for a known key.
        account_id, rules = await service.account_for_key(intake=intake, key=key)
        params = service.check_params(hostname=hostname, mac=mac, ip=ip, now=now, tags=tags or ())
        body = await request.body()
        received_ms = now_ms()
        judged = await runtime.off_loop(
            functools.partial(
                service.prepare,
                account_id=account_id,
                params=params,
                body=body,
                content_encoding=request.headers.get("content-encoding"),
                rules=rules,
                received_ms=received_ms,
            )
        )
        del body
        await intake.commit([judged])
    # Committed: live tail gets the stored lines and the indexonly ones, after the answer
    # (unless nobody can be listening: no subscriber in this process, no Redis).
    if intake.wants_tail(account_id):
        background.add_task(intake.publish, [judged])
    # Pipelines with a log-analysis-ingestion source get the committed lines, after the
    # answer too (docs/components.md).
    pipelines = state.pipelines
    if await pipelines.ingestion_feed.wanted(db=state.db, runtime=pipelines, account_id=account_id):
        background.add_task(
            pipelines.ingestion_feed.feed,
            runtime=pipelines,
            intake=intake,
            judged=[judged],
            received_ms=received_ms,
        )
    return schemas.IngestOk(status="ok")


async def _serve_ingest(request: Request) -> Response:
    """``ingest`` called with its parameters read by hand, as FastAPI would read them (the
    same credential schemes; a repeated query parameter: the last one counts): FastAPI's
    per-request solving of these eight parameters cost about 100 us, a third of the
    request's CPU outside the database."""
    query = request.query_params
    background = BackgroundTasks()
    answer = await ingest(
        request,
        background,
        key=await ingestion_key(
            basic=await _basic(request),
            header=await _apikey_header(request),
            query=await _apikey_query(request),
        ),
        hostname=query.get("hostname"),
        mac=query.get("mac"),
        ip=query.get("ip"),
        now=query.get("now"),
        tags=query.getlist("tags") or None,
    )
    return Response(answer.model_dump_json(), media_type="application/json", background=background)


class _IngestRoute(APIRoute):
    """Documented from ``ingest``'s signature like any route; served by ``_serve_ingest``
    (FastAPI's supported extension point for a route's request handling)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        return _serve_ingest


for path, summary in (
    ("/logs/ingest", "Ingest log lines (the platform's ingestion protocol)"),
    # The platform agent's default endpoint: the same protocol, credentials and answers.
    (
        "/logs/agent",
        "Ingest log lines (the platform agent's endpoint; same protocol as /logs/ingest)",
    ),
):
    router.add_api_route(
        path,
        ingest,
        methods=["POST"],
        summary=summary,
        response_model=schemas.IngestOk,
        responses=_INGEST_RESPONSES,
        openapi_extra={"requestBody": _INGEST_BODY},
        route_class_override=_IngestRoute,
    )

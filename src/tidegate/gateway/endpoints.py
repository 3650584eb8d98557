"""``POST /gateway/{gateway_route_id}``: events for the pipelines whose HTTP source is
bound to the route. Not a management endpoint: the credential is one of the route's
access keys, and errors use the legacy shape."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Annotated, Any, Final

from fastapi import APIRouter, Header, Path, Request, Response
from starlette.requests import ClientDisconnect

from tidegate.api.body_guard import INGEST_MAX_BYTES
from tidegate.api.error_models import LegacyError, error_response
from tidegate.app_state import app_state
from tidegate.components.catalogue import REGISTRY
from tidegate.components.sources.push import ROUTE_ITSELF
from tidegate.errors import BadRequest, PayloadTooLarge
from tidegate.gateway import schemas
from tidegate.gateway.service import Accepted, GatewayRequest, accept
from tidegate.kit.body import MAX_EVENTS

router = APIRouter(tags=["Gateway"])

RouteIdPath = Annotated[
    str,
    Path(
        min_length=1,
        max_length=36,
        pattern=r"^[0-9A-Za-z_-]+$",
        description="The gateway route's id",
    ),
]


async def read_body(request: Request) -> bytes:
    """The body, read only once the credentials passed, and never beyond 10 MB (the
    body guard holds chunked and lying senders to the same limit while streaming)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > INGEST_MAX_BYTES:
        raise PayloadTooLarge(f"Request body exceeds {INGEST_MAX_BYTES} bytes")
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > INGEST_MAX_BYTES:
                raise PayloadTooLarge(f"Request body exceeds {INGEST_MAX_BYTES} bytes")
            chunks.append(chunk)
    except ClientDisconnect:
        raise BadRequest("The client disconnected before sending the whole body") from None
    return b"".join(chunks)


_EVENT = {"type": "object", "additionalProperties": True}
_REQUEST_BODY: Final[dict[str, Any]] = {
    "required": True,
    "description": "One JSON object, a JSON array of objects, or newline-delimited JSON "
    "(one object per line). `Content-Encoding: gzip` (every member), `deflate` (zlib "
    f"or raw) and `zstd` are accepted. At most 10 MB and {MAX_EVENTS} events.",
    "content": {
        "application/json": {
            "schema": {"oneOf": [_EVENT, {"type": "array", "items": _EVENT}]},
        },
        "application/x-ndjson": {"schema": {"type": "string"}},
    },
}


def _error(description: str) -> dict[str, Any]:
    return error_response(LegacyError, description)


_RETRY_AFTER = {"Retry-After": {"description": "Seconds to wait", "schema": {"type": "integer"}}}
RESPONSES: Final[dict[int | str, dict[str, Any]]] = {
    400: _error("The body is not one of the accepted forms"),
    401: _error("Missing or invalid access key, or a missing or invalid signature"),
    403: _error("The route's account is deactivated"),
    404: _error("No such gateway route"),
    413: _error(f"Body larger than 10 MB, or more than {MAX_EVENTS} events"),
    415: _error("Unsupported Content-Encoding"),
    429: {**_error("Too many requests in flight for this route"), "headers": _RETRY_AFTER},
    503: {
        **_error("A destination did not take the events in time; retry (at-least-once)"),
        "headers": _RETRY_AFTER,
    },
}


@router.post(
    "/gateway/{gateway_route_id}",
    summary="Send events to the pipelines of a gateway route",
    description=(
        "Runs the events through every pipeline whose HTTP source is bound to the route. "
        "Credential: one of the route's access keys in `Authorization`, bare or "
        "`Token <key>` (or in `X-Amz-Firehose-Access-Key`, `apiKey` or `DD-API-KEY`, for the "
        "Kinesis Firehose, agent and Datadog Agent sources). When the route has signing keys, `X-Hub-Signature: "
        "<sha1|sha256|sha384|sha512>=<hex HMAC of the raw body>` must verify under one "
        "of them, else 401 and nothing is processed. **200** means every destination "
        "stored or acknowledged the events; **429/503** with `Retry-After` means the "
        "sender should retry later. Delivery is at-least-once: a retry after a partial "
        "failure can deliver some events twice."
    ),
    response_model=schemas.GatewayAccepted,
    responses=RESPONSES,
    openapi_extra={"requestBody": _REQUEST_BODY},
)
async def send_events(
    request: Request,
    gateway_route_id: RouteIdPath,
    authorization: Annotated[
        str | None, Header(description="An access key of the route: `<key>` or `Token <key>`")
    ] = None,
    x_hub_signature: Annotated[
        str | None,
        Header(
            alias="X-Hub-Signature",
            description="`<method>=<hex HMAC of the body>`; required when the route has "
            "signing keys, and by a webhook source",
        ),
    ] = None,
    content_encoding: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> schemas.GatewayAccepted | Response:
    accepted = await _accept(request, gateway_route_id, ROUTE_ITSELF)
    if accepted.answer is not None:
        # A protocol with its own answer (Kinesis Firehose's requestId and timestamp).
        return Response(accepted.answer, media_type=accepted.media_type)
    return schemas.GatewayAccepted(events=accepted.events, pipelines=accepted.pipelines)


# Where senders put the access key: ``Authorization`` first, then the headers of
# protocols that cannot send one (Kinesis Firehose's HTTP endpoint delivery, the
# platform agent's ingestion key, the Datadog Agent's API key).
_CREDENTIAL_HEADERS: Final = ("authorization", "x-amz-firehose-access-key", "apikey", "dd-api-key")


def _credential(headers: Mapping[str, str]) -> str | None:
    for name in _CREDENTIAL_HEADERS:
        value = headers.get(name)
        if value:
            return value
    return None


async def _accept(request: Request, gateway_route_id: str, path: str) -> Accepted:
    state = app_state(request)
    runtime = state.pipelines
    headers = request.headers
    return await accept(
        state=state,
        runtime=runtime,
        request=GatewayRequest(
            gateway_route_id=gateway_route_id,
            authorization=_credential(headers),
            signature=headers.get("x-hub-signature"),
            content_type=headers.get("content-type"),
            content_encoding=headers.get("content-encoding"),
            path=path,
            query=dict(request.query_params),
            headers=dict(headers),
        ),
        read_body=partial(read_body, request),
    )


def _protocol_endpoint(path: str) -> Callable[..., Awaitable[Response]]:
    async def receive(
        request: Request,
        gateway_route_id: RouteIdPath,
        authorization: Annotated[
            str | None,
            Header(description="An access key of the route: `Token <key>` or `Splunk <key>`"),
        ] = None,
    ) -> Response:
        accepted = await _accept(request, gateway_route_id, path)
        if accepted.answer is None:
            answer = schemas.GatewayAccepted(events=accepted.events, pipelines=accepted.pipelines)
            return Response(answer.model_dump_json(), media_type="application/json")
        return Response(accepted.answer, media_type=accepted.media_type)

    return receive


def _protocols() -> list[tuple[str, str]]:
    """The paths below a route that push sources serve (``Component.paths``), each with
    the types serving it: the registry says, the gateway names no type."""
    served: dict[str, list[str]] = {}
    for component in REGISTRY.of_kind("source"):
        for path in component.paths:
            if path != ROUTE_ITSELF:
                served.setdefault(path, []).append(f"{component.type} source")
    return [
        (path, "Push source protocol: " + ", ".join(names))
        for path, names in sorted(served.items())
    ]


# The protocols of push sources, below their route (docs/components.md).
_PROTOCOLS: Final = _protocols()
for _path, _summary in _PROTOCOLS:
    router.add_api_route(
        f"/gateway/{{gateway_route_id}}/{_path}",
        _protocol_endpoint(_path),
        methods=["POST"],
        summary=_summary,
        responses=RESPONSES,
        response_class=Response,
    )

"""``POST /gateway/{id}``, without HTTP: check the route's credentials, run the events
through every pipeline bound to the route, deliver them, and say whether every
destination took them. A 200 therefore means "stored or acknowledged"; anything else
means the sender must retry (at-least-once: a retry after a partial failure may deliver
some events twice)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Final

from tidegate.app_state import AppState
from tidegate.clock import now_ms
from tidegate.components.base import Event
from tidegate.components.sources.push import ROUTE_ITSELF, Push, Received
from tidegate.delivery import DeliveryFailed
from tidegate.errors import (
    Forbidden,
    NotFound,
    RateLimited,
    ServiceUnavailable,
    Unauthorized,
)
from tidegate.kit.body import decoded_body, events_of
from tidegate.kit.signature import verify_signature
from tidegate.models import Account
from tidegate.pipelines import gateway_service, repository
from tidegate.runtime.backpressure import Saturated
from tidegate.runtime.compiler import CompiledPipeline, PipelineBroken, run_graph
from tidegate.runtime.delivery import Delivery
from tidegate.runtime.features import enabled_features
from tidegate.runtime.runtime import Runtime

log = logging.getLogger("tidegate.gateway")

__all__ = ["Accepted", "BodyReader", "GatewayRequest", "accept", "presented_access_key"]

RETRY_SATURATED_S: Final = 1
RETRY_DESTINATION_S: Final = 5


@dataclass(frozen=True, slots=True)
class GatewayRequest:
    """What the gateway knows of a request before reading its body."""

    gateway_route_id: str
    authorization: str | None
    signature: str | None
    content_type: str | None
    content_encoding: str | None
    path: str = ROUTE_ITSELF
    """Below the route (``v1/logs``...): which push sources the request is for."""
    query: Mapping[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)


BodyReader = Callable[[], Awaitable[bytes]]
"""Reads the request body (at most 10 MB, else ``PayloadTooLarge``)."""


@dataclass(frozen=True, slots=True)
class Accepted:
    events: int
    pipelines: int
    answer: bytes | None = None
    """The body of the answer when the source's protocol has its own (HEC, OTLP)."""
    media_type: str | None = None


def presented_access_key(authorization: str | None) -> str | None:
    """``Authorization: <key>``, ``Token <key>`` or (Splunk HEC clients) ``Splunk <key>``."""
    if not authorization:
        return None
    value = authorization.strip()
    scheme, space, rest = value.partition(" ")
    if space and scheme.lower() in ("token", "splunk"):
        value = rest.strip()
    return value or None


def _unavailable(message: str, retry_after: int) -> ServiceUnavailable:
    return ServiceUnavailable(message, headers={"Retry-After": str(retry_after)})


async def accept(
    *, state: AppState, runtime: Runtime, request: GatewayRequest, read_body: BodyReader
) -> Accepted:
    """The credentials are checked before ``read_body`` is called: a sender without a
    valid access key (or of a deactivated account) is answered without tidegate reading,
    buffering or parsing what it sends."""
    route_id = request.gateway_route_id
    async with state.db.read_sessions() as session:
        route = await repository.gateway_route_by_id(session=session, gateway_route_id=route_id)
        if route is None:
            raise NotFound(f"No gateway route {route_id}")
        key = presented_access_key(request.authorization)
        if key is None:
            raise Unauthorized("Missing access key: send Authorization: Token <access key>")
        found = await gateway_service.access_key_for_route(
            session=session, gateway_route_id=route_id, key=key
        )
        if found is None:
            raise Unauthorized("Invalid access key for this gateway route")
        account = await session.get(Account, route.account_id)
        if account is None or account.status == "deactivated":
            raise Forbidden("The account of this gateway route is deactivated")
        secrets = await gateway_service.signing_secrets(
            session=session, sealer=state.sealer, gateway_route_id=route_id
        )
    # No database session is held while a (possibly slow) sender uploads its body.
    body = await read_body()
    if secrets and not verify_signature(body, request.signature, secrets):
        what = "Invalid" if request.signature else "Missing"
        raise Unauthorized(f"{what} X-Hub-Signature: sign the body with a signing key of the route")
    async with state.db.read_sessions() as session:
        try:
            pipelines = await runtime.pipelines.for_route(
                session=session, gateway_route_id=route_id
            )
        except PipelineBroken as error:
            log.error("%s", error)
            raise _unavailable("A pipeline of this gateway route cannot run", 60) from None
        features = await enabled_features(
            session=session,
            account_id=route.account_id,
            needed=frozenset().union(*(p.features for p in pipelines)),
        )
    received_ms = now_ms()
    try:
        with runtime.admit(route_id, pipelines):
            # Inflating and parsing are CPU work proportional to the body: in a worker
            # thread, a few at a time per worker (which also bounds their memory).
            work = len(body) // 64
            decoded = await runtime.offload(
                partial(decoded_body, body, request.content_encoding), work=work
            )
            body_bytes = len(body)
            push = Push(
                path=request.path,
                raw=body,
                body=decoded,
                content_type=request.content_type,
                query=request.query,
                headers=request.headers,
                signature=request.signature,
            )
            del body, decoded
            received = await _receive(runtime, pipelines, route_id, push, work)
            delivery = Delivery()
            fed = 0
            for pipeline in pipelines:
                events = received.by_node.get(pipeline.pipeline_id)
                if events is None:
                    continue
                fed += 1
                outputs = await run_graph(
                    pipeline,
                    [],
                    gateway_route_id=route_id,
                    features=features,
                    offload=runtime.offload,
                    source_events=events,
                )
                runtime.observe(
                    pipeline,
                    outputs,
                    batch=received.events,
                    body_bytes=body_bytes,
                    now_ms=received_ms,
                )
                delivery.add(pipeline, outputs)
            await runtime.deliver(delivery, intake=state.intake, received_ms=received_ms)
    except Saturated as error:
        if error.key == route_id:
            raise RateLimited(
                "Too many requests in flight for this gateway route; retry later",
                headers={"Retry-After": str(RETRY_SATURATED_S)},
            ) from None
        raise _unavailable(
            "A destination of this gateway route is saturated; retry later", RETRY_SATURATED_S
        ) from None
    except DeliveryFailed:
        raise _unavailable(
            "A destination did not take the events; retry later", RETRY_DESTINATION_S
        ) from None
    return Accepted(
        events=received.events,
        pipelines=fed,
        answer=received.answer,
        media_type=received.media_type,
    )


@dataclass(slots=True)
class _Received:
    by_node: dict[str, dict[str, list[Event]]] = field(default_factory=dict)
    """pipeline id -> source node id -> its events"""
    events: int = 0
    answer: bytes | None = None
    media_type: str | None = None


async def _receive(
    runtime: Runtime, pipelines: list[CompiledPipeline], route_id: str, push: Push, work: int
) -> _Received:
    """The events each source of the route bound to ``push.path`` makes of the request;
    sources of one type and configuration decode it once. A path no source of the route
    serves is a 404 (a route with no pipeline still checks the body's form)."""
    result = _Received()
    made: dict[tuple[str, str], Received] = {}
    for pipeline in pipelines:
        for node in pipeline.nodes:
            component = node.component
            if (
                node.kind != "source"
                or node.gateway_route_id != route_id
                or component.receive is None
                or push.path not in component.paths
            ):
                continue
            key = (node.type, node.fingerprint)
            got = made.get(key)
            if got is None:
                got = await runtime.offload(
                    partial(component.receive, node.config, push), work=work
                )
                made[key] = got
            result.by_node.setdefault(pipeline.pipeline_id, {})[node.id] = got.events
            result.events = max(result.events, len(got.events))
            if result.answer is None:
                result.answer, result.media_type = got.answer, got.media_type
    if made:
        return result
    if push.path != ROUTE_ITSELF or pipelines:
        where = f"/{push.path}" if push.path else "the route itself"
        raise NotFound(f"No source of this gateway route takes requests at {where}")
    events = await runtime.offload(
        partial(events_of, push.body, content_type=push.content_type), work=work
    )
    result.events = len(events)
    return result

"""``POST /gateway/{id}``, without HTTP: check the route's credentials, run the events
through every pipeline bound to the route, deliver them, and say whether every
destination took them. A 200 therefore means "stored or acknowledged"; anything else
means the sender must retry (at-least-once: a retry after a partial failure may deliver
some events twice)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Final

from tidegate.app_state import AppState
from tidegate.enterprise.service import has_feature
from tidegate.errors import (
    Forbidden,
    NotFound,
    RateLimited,
    ServiceUnavailable,
    Unauthorized,
)
from tidegate.gateway.body import parse_events
from tidegate.gateway.signature import verify_signature
from tidegate.models import Account
from tidegate.pipelines import gateway_service, repository
from tidegate.runtime.backpressure import Saturated
from tidegate.runtime.compiler import PipelineBroken, run_graph
from tidegate.runtime.http_destination import DeliveryFailed
from tidegate.runtime.runtime import Delivery, Runtime, now_ms

log = logging.getLogger("tidegate.gateway")

__all__ = ["Accepted", "BodyReader", "GatewayRequest", "accept", "presented_access_key"]

THROTTLE_FEATURE: Final = "throttle-processor"
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


BodyReader = Callable[[], Awaitable[bytes]]
"""Reads the request body (at most 10 MB, else ``PayloadTooLarge``)."""


@dataclass(frozen=True, slots=True)
class Accepted:
    events: int
    pipelines: int


def presented_access_key(authorization: str | None) -> str | None:
    """``Authorization: <key>`` or ``Authorization: Token <key>``."""
    if not authorization:
        return None
    value = authorization.strip()
    scheme, space, rest = value.partition(" ")
    if space and scheme.lower() == "token":
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
        throttle_enabled = any(p.has_throttle for p in pipelines) and await has_feature(
            session=session, account_id=route.account_id, name=THROTTLE_FEATURE
        )
    received_ms = now_ms()
    try:
        with runtime.admit(route_id, pipelines):
            # Inflating and parsing are CPU work proportional to the body: in a worker
            # thread, a few at a time per worker (which also bounds their memory).
            events = await runtime.offload(
                partial(
                    parse_events,
                    body,
                    content_type=request.content_type,
                    content_encoding=request.content_encoding,
                ),
                work=len(body) // 64,
            )
            body_bytes = len(body)
            del body
            delivery = Delivery()
            for pipeline in pipelines:
                outputs = await run_graph(
                    pipeline,
                    events,
                    gateway_route_id=route_id,
                    throttle_enabled=throttle_enabled,
                    offload=runtime.offload,
                )
                runtime.observe(
                    pipeline, outputs, batch=len(events), body_bytes=body_bytes, now_ms=received_ms
                )
                delivery.add(pipeline, outputs)
            await runtime.deliver(
                delivery,
                db=state.db,
                writer=state.ingest.writer,
                received_ms=received_ms,
                tail=state.tail,
                rules=state.ingest.rules,
            )
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
    return Accepted(events=len(events), pipelines=len(pipelines))

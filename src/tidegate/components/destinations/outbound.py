"""What the outbound destinations (``http``, ``loki``, ``elasticsearch``,
``splunk-hec-logs``) share as components: a sender built per node, delivery of every
parcel of a request concurrently, the check on save that their hosts are public, and
``ack_enabled``.

``ack_enabled`` (default true): the gateway answers 200 only once the destination took
the events. With ``false`` the gateway answers without waiting: the events are sent in
the background (with the same retries, within ``BACKGROUND_DEADLINE_S``), and a failure
is logged, not reported. At most ``MAX_BACKGROUND`` such deliveries run per worker;
past that a delivery waits in the request like an acknowledged one, so memory stays
bounded and a slow destination slows its senders down instead.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Final, Generic, TypeVar

import httpcore
from pydantic import BaseModel, HttpUrl

from tidegate.components.base import (
    BuildContext,
    Component,
    DeliveryContext,
    NodeRef,
    Parcel,
    config_refused,
)
from tidegate.components.destinations.http_sender import (
    MAX_RESPONSE_BYTES,
    OutboundSender,
    Settle,
)
from tidegate.components.destinations.wire import WireRequest
from tidegate.delivery import DeliveryFailed
from tidegate.kit.destination_guard import DestinationPolicy, DestinationRefused

__all__ = [
    "BACKGROUND_DEADLINE_S",
    "MAX_BACKGROUND",
    "Authorize",
    "Encoder",
    "Send",
    "acknowledged_delivery",
    "outbound_component",
    "vet_urls",
]

log = logging.getLogger("tidegate.runtime.http")

C = TypeVar("C", bound=BaseModel)
Event = dict[str, Any]
Encoder = Callable[[C, list[Event], int, int], list[WireRequest]]
"""``(config, events, received_ms, attempt)`` -> the requests (``attempt`` lets a retry
pick another endpoint)."""
Authorize = Callable[[float], Awaitable[Sequence[tuple[str, str]]]]
"""``(deadline)`` -> headers every request of a delivery carries, asked for once per
delivery after encoding (an OAuth access token, fetched or refreshed when due)."""

MAX_BACKGROUND: Final = 256
BACKGROUND_DEADLINE_S: Final = 60.0
_background: set[asyncio.Task[None]] = set()


@dataclass(frozen=True, slots=True)
class OutboundRuntime(Generic[C]):
    config: C
    sender: OutboundSender
    encode: Encoder[C]
    ack: bool
    rotating: bool
    authorize: Authorize | None = None


async def vet_urls(urls: Sequence[tuple[str, HttpUrl]], policy: DestinationPolicy) -> None:
    """A host that is, or resolves now to, a non-public address the operator did not
    allow is refused (400 on the field). A name that does not resolve yet is accepted:
    the check is made again at every connection."""
    for pointer, url in urls:
        try:
            await policy.resolve(url.host or "", url.port or 443)
        except DestinationRefused as error:
            message = f"must not target a non-public address: {error}"
            raise config_refused(
                pointer, message, keyword="format", params={"format": "uri"}
            ) from None
        except httpcore.ConnectError:
            pass


def outbound_component(
    *,
    type_: str,
    config_model: type[C],
    encode: Encoder[C],
    urls: Callable[[C], Sequence[tuple[str, HttpUrl]]],
    describe: str,
    timeout_s: Callable[[C], float] = lambda _config: 30.0,
    max_retries: Callable[[C], int] = lambda _config: 5,
    ack: Callable[[C], bool] = lambda config: bool(getattr(config, "ack_enabled", True)),
    accepted: Callable[[bytes], bool] | None = None,
    settle: Settle | None = None,
    response_bytes: int = MAX_RESPONSE_BYTES,
    rotating: bool = False,
    bind: Callable[[Encoder[C], BuildContext], Encoder[C]] | None = None,
    authorizer: Callable[[C, OutboundSender], Authorize] | None = None,
) -> Component[C]:
    """``settle``: reads a 2xx answer item by item (``http_sender``), with
    ``response_bytes`` of it read. ``rotating``: a retry re-encodes for attempt n (another endpoint). ``bind``: the
    encoder of a node built in this context (the ``s3`` destination's endpoint).
    ``authorizer``: the node's ``Authorize`` (given its sender, which fetches tokens
    with the same guard, retries and bounded reads)."""

    def build(config: C, context: BuildContext, node: NodeRef) -> OutboundRuntime[C]:
        if context.http_client is None:
            raise RuntimeError(f"a {type_} destination needs BuildContext.http_client")
        options: dict[str, Any] = {} if accepted is None else {"accepted": accepted}
        if settle is not None:
            options["settle"] = settle
        sender = OutboundSender(
            client=context.http_client(),
            name=f"{type_} destination {node.node_id} of pipeline {node.pipeline_id}",
            concurrency=context.http_concurrency,
            timeout_s=timeout_s(config),
            max_retries=max_retries(config),
            backoff_base_ms=context.backoff_base_ms,
            backoff_cap_ms=context.backoff_cap_ms,
            response_bytes=response_bytes,
            **options,
        )
        encoder = encode if bind is None else bind(encode, context)
        authorize = None if authorizer is None else authorizer(config, sender)
        return OutboundRuntime(config, sender, encoder, ack(config), rotating, authorize)

    async def vet(config: C, policy: DestinationPolicy) -> None:
        await vet_urls(urls(config), policy)

    return Component(
        kind="destination",
        type=type_,
        config_model=config_model,
        build=build,
        describe=describe,
        deliver=_DELIVER,
        vet=vet,
        outbound=True,
    )


Send = Callable[[Parcel, DeliveryContext, float], Awaitable[None]]
"""``(parcel, context, deadline)``: deliver one node's events or raise."""


def acknowledged_delivery(
    send: Send, acknowledged: Callable[[Parcel], bool]
) -> Callable[[Sequence[Parcel], DeliveryContext], Awaitable[None]]:
    """A ``Component.deliver``: each node's events through ``send``, concurrently; every
    failure of an acknowledged node is reported (``DeliveryFailed``: the sender
    retries); an unacknowledged node's events are sent in the background (within
    ``BACKGROUND_DEADLINE_S``, at most ``MAX_BACKGROUND`` at once per worker)."""

    async def deliver(parcels: Sequence[Parcel], context: DeliveryContext) -> None:
        waited = []
        for parcel in parcels:
            if not acknowledged(parcel) and len(_background) < MAX_BACKGROUND:
                task = asyncio.create_task(_unacknowledged(send, parcel, context))
                _background.add(task)
                task.add_done_callback(_background.discard)
            else:
                waited.append(send(parcel, context, context.deadline))
        results = await asyncio.gather(*waited, return_exceptions=True)
        failures = [result for result in results if isinstance(result, BaseException)]
        for failure in failures:
            if not isinstance(failure, Exception):  # cancellation: not ours to swallow
                raise failure
        if failures:
            raise DeliveryFailed("; ".join(str(failure) for failure in failures))

    return deliver


async def _send(parcel: Parcel, context: DeliveryContext, deadline: float) -> None:
    runtime: OutboundRuntime[Any] = parcel.runtime
    requests = await context.offload(
        partial(runtime.encode, runtime.config, parcel.events, context.received_ms, 0),
        work=len(parcel.events),
    )

    extra: Sequence[tuple[str, str]] = ()

    def retry_as(index: int, attempt: int) -> WireRequest:
        request = runtime.encode(runtime.config, parcel.events, context.received_ms, attempt)[index]
        return _with_headers(request, extra)

    try:
        async with asyncio.timeout_at(deadline):
            if runtime.authorize is not None:
                extra = tuple(await runtime.authorize(deadline))
                requests = [_with_headers(request, extra) for request in requests]
            await runtime.sender.send_all(
                requests, deadline=deadline, rotate=retry_as if runtime.rotating else None
            )
    except TimeoutError:
        raise DeliveryFailed(f"{runtime.sender.name}: slower than the delivery deadline") from None


_DELIVER: Final = acknowledged_delivery(_send, lambda parcel: bool(parcel.runtime.ack))


def _with_headers(request: WireRequest, extra: Sequence[tuple[str, str]]) -> WireRequest:
    if not extra:
        return request
    return dataclasses.replace(request, headers=(*request.headers, *extra))


async def _unacknowledged(send: Send, parcel: Parcel, context: DeliveryContext) -> None:
    deadline = asyncio.get_running_loop().time() + BACKGROUND_DEADLINE_S
    try:
        await send(parcel, context, deadline)
    except Exception as error:  # any: nobody waits for this delivery
        log.warning("unacknowledged delivery failed: %s", error)

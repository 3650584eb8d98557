"""The ``http`` destination: POSTs batches of events to ``uri`` (the sender and its
retry rules are in ``http_sender``). Its host must be a public address unless the
operator allowed it (checked on save and at every connection)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Annotated, Final, Literal

import httpcore
from pydantic import BaseModel, ConfigDict, Field, HttpUrl, field_validator

from tidegate.components.base import (
    BuildContext,
    Component,
    DeliveryContext,
    DeliveryFailed,
    NodeRef,
    Parcel,
)
from tidegate.components.destinations.http_sender import HttpDestination
from tidegate.errors import ErrorItem, ValidationFailed
from tidegate.runtime.destination_guard import DestinationPolicy, DestinationRefused

__all__ = ["COMPONENT", "HttpBatch", "HttpDestinationConfig"]

_HEADER_NAME = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,256}$")
_HEADER_VALUE = re.compile(r"^[^\x00-\x08\x0a-\x1f\x7f]{0,8192}$")
# Set by the client from the connection and the batch; a configured value would lie.
_RESERVED_HEADERS: Final = frozenset({"content-length", "host", "transfer-encoding", "connection"})


class HttpBatch(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    max_events: Annotated[int, Field(strict=True, ge=1, le=10_000)] = 1_000
    max_bytes: Annotated[int, Field(strict=True, ge=1_024, le=10 * 1024 * 1024)] = 1024 * 1024
    timeout_ms: Annotated[int, Field(strict=True, ge=1, le=300_000)] = 1_000


class HttpDestinationConfig(BaseModel):
    """POSTs batches of events to ``uri``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    uri: Annotated[HttpUrl, Field(max_length=2048)]
    headers: Annotated[dict[str, str], Field(max_length=50)] = {}
    batch: HttpBatch = HttpBatch()
    timeout_ms: Annotated[int, Field(strict=True, ge=100, le=120_000)] = 30_000
    max_retries: Annotated[int, Field(strict=True, ge=0, le=20)] = 5
    encoding: Literal["json", "ndjson"] = "json"

    @field_validator("headers")
    @classmethod
    def _valid_headers(cls, headers: dict[str, str]) -> dict[str, str]:
        for name, value in headers.items():
            if not _HEADER_NAME.match(name):
                raise ValueError(f"{name!r} is not a valid HTTP header name")
            if name.lower() in _RESERVED_HEADERS:
                raise ValueError(f"header {name!r} is set by tidegate and cannot be configured")
            if not _HEADER_VALUE.match(value):
                raise ValueError(
                    f"the value of header {name!r} must be at most 8192 characters "
                    "without control characters"
                )
        return headers


async def _vet(config: HttpDestinationConfig, policy: DestinationPolicy) -> None:
    """A host that is, or resolves now to, a non-public address the operator did not
    allow is refused (400 on ``/user_config/uri``). A name that does not resolve yet is
    accepted: the check is made again at every connection."""
    host = config.uri.host or ""
    try:
        await policy.resolve(host, config.uri.port or 443)
    except DestinationRefused as error:
        message = f"must not target a non-public address: {error}"
        raise ValidationFailed(
            f"body.user_config.uri {message}",
            context="body",
            errors=[
                ErrorItem(
                    keyword="format",
                    message=message,
                    instance_path="/user_config/uri",
                    schema_path="#/properties/uri/format",
                    params={"format": "uri"},
                )
            ],
        ) from None
    except httpcore.ConnectError:
        pass


def _build(config: HttpDestinationConfig, context: BuildContext, node: NodeRef) -> HttpDestination:
    if context.http_client is None:
        raise RuntimeError("an http destination needs BuildContext.http_client")
    return HttpDestination(
        config,
        client=context.http_client(),
        concurrency=context.http_concurrency,
        backoff_base_ms=context.backoff_base_ms,
        backoff_cap_ms=context.backoff_cap_ms,
        name=f"http destination {node.node_id} of pipeline {node.pipeline_id}",
    )


async def _deliver(parcels: Sequence[Parcel], context: DeliveryContext) -> None:
    """Each node's events to its uri, concurrently; every failure is reported."""
    results = await asyncio.gather(
        *(_send(parcel, context) for parcel in parcels), return_exceptions=True
    )
    failures = [result for result in results if isinstance(result, BaseException)]
    for failure in failures:
        if not isinstance(failure, Exception):  # cancellation: not ours to swallow
            raise failure
    if failures:
        raise DeliveryFailed("; ".join(str(failure) for failure in failures))


async def _send(parcel: Parcel, context: DeliveryContext) -> None:
    sender: HttpDestination = parcel.runtime
    try:
        async with asyncio.timeout_at(context.deadline):
            await sender.send(parcel.events, deadline=context.deadline, offload=context.offload)
    except TimeoutError:
        raise DeliveryFailed(f"{sender.name}: slower than the delivery deadline") from None


COMPONENT: Component[HttpDestinationConfig] = Component(
    kind="destination",
    type="http",
    config_model=HttpDestinationConfig,
    build=_build,
    describe="POSTs batches to `uri` (json or ndjson), retried with backoff",
    deliver=_deliver,
    vet=_vet,
    outbound=True,
)

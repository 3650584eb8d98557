"""The ``http`` destination's configuration (the platform's field names) and its wire
format, as pure functions.

Fields: ``uri``; ``method`` (``post``, ``put``, ``patch``; default ``post``);
``encoding`` ``json`` (one JSON array per request, ``application/json``), ``ndjson``
(one event per line, each line ending in ``\\n``, ``application/x-ndjson``) or ``text``
(each event's ``message``, else its ``line``, else its JSON, one per line,
``text/plain; charset=utf-8``); ``compression`` ``gzip`` or ``none``; ``auth``
(``{strategy: basic, user, password}`` or ``{strategy: bearer, token}``); ``headers``
(``[{header_name, header_value}]``); ``max_bytes`` (the encoded batch before
compression; one larger event travels alone); ``timeout_secs``; ``ack_enabled``;
``payload_prefix`` / ``payload_suffix`` (bytes written before and after each request's
events, e.g. ``{"data":`` and ``}`` around a JSON array).

The platform's Terraform provider sends ``max_bytes``, ``timeout_secs``, ``method``,
``payload_prefix`` and ``payload_suffix`` inside ``advanced_options{}`` (always
present, maybe empty): read as if given beside ``uri``. Its ``tls_protocols`` (ALPN),
``rate_limiting`` and an enabled ``proxy`` are not built and are refused with a 400
(a proxy that is not enabled is taken).
**Aliases** (tidegate's first http destination, still read): ``headers`` as an object
``{name: value}``, ``batch: {max_events, max_bytes, timeout_ms}`` (``batch.max_bytes``
is ``max_bytes``; ``timeout_ms`` unused), ``timeout_ms`` (``timeout_secs`` x 1000),
``max_retries``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import partial
from typing import Annotated, Any, Final, Literal, Protocol

import httpx
import orjson
from pydantic import BaseModel, ConfigDict, Field, HttpUrl, field_validator, model_validator

from tidegate.components.base import Component, Offload
from tidegate.components.destinations.http_sender import OutboundSender
from tidegate.components.destinations.outbound import outbound_component
from tidegate.components.destinations.wire import (
    MAX_BODY_BYTES,
    Auth,
    Compression,
    Headers,
    WireRequest,
    auth_headers,
    compress,
    header_pairs,
)
from tidegate.components.processors.kit import lift_nested

__all__ = [
    "COMPONENT",
    "HttpBatch",
    "HttpDestination",
    "HttpDestinationConfig",
    "encode_batches",
    "http_requests",
]

CONTENT_TYPES: Final = {
    "json": "application/json",
    "ndjson": "application/x-ndjson",
    "text": "text/plain; charset=utf-8",
}


_NOT_BUILT: Final = ("tls_protocols", "rate_limiting")


class HttpBatch(BaseModel):
    """Alias form: ``batch.max_bytes`` is ``max_bytes``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    max_events: Annotated[int, Field(strict=True, ge=1, le=10_000)] = 1_000
    max_bytes: Annotated[int, Field(strict=True, ge=1_024, le=MAX_BODY_BYTES)] = 1024 * 1024
    timeout_ms: Annotated[int, Field(strict=True, ge=1, le=300_000)] = 1_000


class HttpDestinationConfig(BaseModel):
    """Sends batches of events to ``uri``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    uri: Annotated[HttpUrl, Field(max_length=2048)]
    method: Literal["post", "put", "patch"] = "post"
    encoding: Literal["json", "ndjson", "text"] = "json"
    compression: Compression = "none"
    auth: Auth | None = None
    headers: Headers = []
    max_bytes: Annotated[int, Field(strict=True, ge=1_024, le=MAX_BODY_BYTES)] = 1024 * 1024
    timeout_secs: Annotated[float, Field(ge=0.1, le=120)] = 30
    ack_enabled: bool = True
    payload_prefix: Annotated[str, Field(max_length=8192)] = ""
    payload_suffix: Annotated[str, Field(max_length=8192)] = ""
    # Aliases of tidegate's first form.
    batch: HttpBatch | None = None
    timeout_ms: Annotated[int, Field(strict=True, ge=100, le=120_000)] | None = None
    max_retries: Annotated[int, Field(strict=True, ge=0, le=20)] = 5

    @model_validator(mode="before")
    @classmethod
    def _advanced_options(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("advanced_options"), dict):
            return data
        advanced = dict(data["advanced_options"])
        proxy = advanced.pop("proxy", None)
        if proxy is not None and (not isinstance(proxy, dict) or proxy.get("enabled", False)):
            raise ValueError("advanced_options.proxy: sending through a proxy is not supported")
        for name in _NOT_BUILT:
            if name in advanced:
                raise ValueError(f"advanced_options.{name} is not supported")
        return lift_nested({**data, "advanced_options": advanced}, "advanced_options")

    @field_validator("method", mode="before")
    @classmethod
    def _method_any_case(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _one_authorization(self) -> HttpDestinationConfig:
        if self.auth is not None and any(
            header.header_name.lower() == "authorization" for header in self.headers
        ):
            raise ValueError("give either auth or an Authorization header, not both")
        return self

    @property
    def batch_bytes(self) -> int:
        return self.batch.max_bytes if self.batch is not None else self.max_bytes

    @property
    def batch_events(self) -> int:
        return self.batch.max_events if self.batch is not None else 10_000

    @property
    def timeout_s(self) -> float:
        return self.timeout_ms / 1000 if self.timeout_ms is not None else self.timeout_secs


def _text(event: Any) -> bytes:
    if isinstance(event, dict):
        for name in ("message", "line"):
            value = event.get(name)
            if isinstance(value, str):
                return value.encode("utf-8", "replace")
    return orjson.dumps(event)


def encode_event(event: Any, encoding: str) -> bytes:
    """One event as ``json`` or ``ndjson`` (its JSON) or ``text`` (its ``message``, else
    ``line``, else its JSON) encode it."""
    return _text(event) if encoding == "text" else orjson.dumps(event)


class BatchEncoding(Protocol):
    """How events become request (or object) bodies: the ``http`` destination's
    configuration, and the ``s3`` destination's."""

    @property
    def encoding(self) -> str: ...
    @property
    def payload_prefix(self) -> str: ...
    @property
    def payload_suffix(self) -> str: ...
    @property
    def batch_events(self) -> int: ...
    @property
    def batch_bytes(self) -> int: ...


def _body(parts: list[bytes], config: BatchEncoding) -> bytes:
    if config.encoding == "json":
        payload = b"[" + b",".join(parts) + b"]"
    else:
        payload = b"".join(part + b"\n" for part in parts)
    return config.payload_prefix.encode() + payload + config.payload_suffix.encode()


def encode_batches(events: Sequence[Any], config: BatchEncoding) -> Iterator[bytes]:
    """The request bodies (before compression) for ``events``, split so each holds at
    most ``max_bytes`` of encoded events (and the alias ``batch.max_events``)."""
    max_events, max_bytes = config.batch_events, config.batch_bytes
    parts: list[bytes] = []
    size = 0
    for event in events:
        encoded = encode_event(event, config.encoding)
        if parts and (len(parts) >= max_events or size + len(encoded) + 1 > max_bytes):
            yield _body(parts, config)
            parts, size = [], 0
        parts.append(encoded)
        size += len(encoded) + 1
    if parts:
        yield _body(parts, config)


def http_requests(events: Sequence[Any], config: HttpDestinationConfig) -> list[WireRequest]:
    """Every request that carries ``events`` (CPU work: may run in a worker thread)."""
    headers: list[tuple[str, str]] = [("Content-Type", CONTENT_TYPES[config.encoding])]
    headers += auth_headers(config.auth)
    headers += header_pairs(config.headers)
    requests = []
    for body in encode_batches(events, config):
        sent, extra = compress(body, config.compression)
        requests.append(
            WireRequest(
                method=config.method.upper(),
                url=str(config.uri),
                headers=(*headers, *extra),
                body=sent,
            )
        )
    return requests


class HttpDestination(OutboundSender):
    """The ``http`` destination's sender for one node: events in, requests out."""

    def __init__(
        self,
        config: HttpDestinationConfig,
        *,
        client: httpx.AsyncClient,
        concurrency: int,
        backoff_base_ms: int,
        backoff_cap_ms: int,
        name: str,
    ) -> None:
        super().__init__(
            client=client,
            name=name,
            concurrency=concurrency,
            timeout_s=config.timeout_s,
            max_retries=config.max_retries,
            backoff_base_ms=backoff_base_ms,
            backoff_cap_ms=backoff_cap_ms,
        )
        self.config = config

    async def send(
        self, events: Sequence[Any], *, deadline: float, offload: Offload | None = None
    ) -> None:
        """Deliver every event or raise ``DeliveryFailed``; ``deadline`` is loop time.
        With ``offload``, a large batch is encoded in a worker thread."""
        if offload is None:
            requests = http_requests(events, self.config)
        else:
            requests = await offload(partial(http_requests, events, self.config), work=len(events))
        await self.send_all(requests, deadline=deadline)


def _requests(
    config: HttpDestinationConfig, events: list[Any], _received_ms: int, _attempt: int
) -> list[WireRequest]:
    return http_requests(events, config)


COMPONENT: Component[HttpDestinationConfig] = outbound_component(
    type_="http",
    config_model=HttpDestinationConfig,
    encode=_requests,
    urls=lambda config: [("/uri", config.uri)],
    describe="Sends batches to `uri` (json, ndjson or text; gzip; basic or bearer auth; "
    "headers), retried with backoff",
    timeout_s=lambda config: config.timeout_s,
    max_retries=lambda config: config.max_retries,
)

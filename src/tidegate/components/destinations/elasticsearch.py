"""The ``elasticsearch`` destination's configuration and wire format: the bulk API.

``POST <endpoint>/_bulk`` (``?pipeline=<pipeline>`` when one is set) with
``Content-Type: application/x-ndjson`` and, per event, an action line and the event:

    {"index":{"_index":"<index>"}}
    {...the event...}

each line ending in ``\\n``. ``index`` may hold ``{{ .field }}`` parts and the
strftime fields ``%Y``, ``%m``, ``%d``, ``%H`` of the event's time (``timestamp`` by
the one timestamp rule, else the receive time, UTC); default ``tidegate-%Y.%m.%d``.
``endpoints``: the first is used; a retry after a connection error or 5xx goes to the
next (round robin). ``auth`` (basic or bearer), ``compression`` (gzip or none) as the
http destination. A 200 whose body says ``"errors":true`` (some documents refused) is
a failure: the batch is retried, so delivery stays at-least-once.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from functools import lru_cache
from typing import Annotated, Any, Final
from urllib.parse import quote

import orjson
from pydantic import BaseModel, ConfigDict, Field, HttpUrl, field_validator, model_validator

from tidegate.components.base import Component
from tidegate.components.destinations.outbound import outbound_component
from tidegate.components.destinations.wire import (
    MAX_BODY_BYTES,
    Auth,
    Compression,
    Template,
    WireRequest,
    auth_headers,
    batched,
)
from tidegate.logs.timestamps import epoch_ms

__all__ = ["COMPONENT", "ElasticsearchConfig", "bulk_accepted", "elasticsearch_requests"]

_STRFTIME: Final = re.compile(r"%[YmdH]")
_ERRORS_TRUE: Final = re.compile(rb'"errors"\s*:\s*true')


_AWS_FIELDS: Final = ("access_key_id", "secret_access_key", "region")


class ElasticsearchConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    ack_enabled: bool = True
    endpoints: Annotated[
        list[Annotated[HttpUrl, Field(max_length=2048)]], Field(min_length=1, max_length=10)
    ]
    auth: Auth | None = None
    index: Annotated[str, Field(min_length=1, max_length=512)] = "tidegate-%Y.%m.%d"
    pipeline: Annotated[str, Field(max_length=512)] | None = None
    compression: Compression = "none"
    max_bytes: Annotated[int, Field(strict=True, ge=1_024, le=MAX_BODY_BYTES)] = 5 * 1024 * 1024

    @field_validator("endpoints", mode="before")
    @classmethod
    def _one_endpoint(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @model_validator(mode="before")
    @classmethod
    def _platform_auth(cls, data: Any) -> Any:
        """The platform's Terraform provider sends every ``auth`` attribute, the AWS
        ones (``access_key_id``, ``secret_access_key``, ``region``) empty with basic
        auth: those empty ones are ignored. AWS (SigV4) auth is not built."""
        if not isinstance(data, dict) or not isinstance(data.get("auth"), dict):
            return data
        auth = dict(data["auth"])
        if auth.get("strategy") == "aws":
            raise ValueError("auth: strategy aws (SigV4) is not supported; use basic")
        for name in _AWS_FIELDS:
            if auth.get(name) == "":
                del auth[name]
        return {**data, "auth": auth}

    @field_validator("index")
    @classmethod
    def _index(cls, value: str) -> str:
        Template(value)  # raises on a bad {{ }} part
        return value


@lru_cache(maxsize=1024)
def _time_parts(hour: int) -> dict[str, str]:
    """``%Y %m %d %H`` of an hour since the epoch (UTC): events of a batch share a few."""
    moment = datetime.fromtimestamp(hour * 3600, UTC)
    return {code: moment.strftime(code) for code in ("%Y", "%m", "%d", "%H")}


def _index_name(template: Template, event: dict[str, Any], millis: int) -> str:
    name = template.render(event)
    if "%" in name:
        parts = _time_parts(millis // 3_600_000)
        name = _STRFTIME.sub(lambda match: parts[match.group(0)], name)
    return name.lower()  # Elasticsearch index names are lowercase


def elasticsearch_requests(
    events: Sequence[Any], config: ElasticsearchConfig, *, received_ms: int, endpoint: int = 0
) -> list[WireRequest]:
    """The bulk requests carrying ``events`` (to ``endpoints[endpoint]``)."""
    base = str(config.endpoints[endpoint % len(config.endpoints)]).rstrip("/")
    url = base + "/_bulk"
    if config.pipeline:
        url += "?pipeline=" + quote(config.pipeline, safe="")
    headers = [("Content-Type", "application/x-ndjson"), *auth_headers(config.auth)]
    template = Template(config.index)

    def chunks() -> Iterator[bytes]:
        for event in events:
            fields = event if isinstance(event, dict) else {}
            millis = epoch_ms(fields.get("timestamp"))
            index = _index_name(template, fields, received_ms if millis is None else millis)
            yield orjson.dumps({"index": {"_index": index}}) + b"\n" + orjson.dumps(event) + b"\n"

    return batched(
        chunks(),
        max_bytes=config.max_bytes,
        url=url,
        headers=headers,
        compression=config.compression,
    )


def bulk_accepted(head: bytes) -> bool:
    """Whether a 2xx bulk answer (its first bytes) took every document."""
    return _ERRORS_TRUE.search(head) is None


def _encode(
    config: ElasticsearchConfig, events: list[Any], received_ms: int, attempt: int
) -> list[WireRequest]:
    return elasticsearch_requests(events, config, received_ms=received_ms, endpoint=attempt)


COMPONENT: Component[ElasticsearchConfig] = outbound_component(
    type_="elasticsearch",
    config_model=ElasticsearchConfig,
    encode=_encode,
    urls=lambda config: [(f"/endpoints/{n}", url) for n, url in enumerate(config.endpoints)],
    describe="Elasticsearch's bulk API (NDJSON) into `index`; a retry goes to the next endpoint",
    accepted=bulk_accepted,
    rotating=True,
)

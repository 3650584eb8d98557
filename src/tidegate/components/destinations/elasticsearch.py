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
http destination.

The request asks for the answer's ``errors`` and each item's ``status`` and ``error``
only (``filter_path``, as Logstash does). A 200 whose body says ``"errors":true`` is
read item by item (``settle``), as Elasticsearch's clients, Logstash and Vector do: the
items refused with 429 or a 5xx are sent again (only they, with the sender's backoff,
to the next endpoint); those refused with another status (a mapping error's 400) are
not, and fail the delivery once nothing is left to retry. An answer that cannot be read
item by item (not JSON, cut at ``ANSWER_BYTES``, not one item per document) sends the
whole request again, as before: at-least-once.
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from functools import lru_cache
from typing import Annotated, Any, Final
from urllib.parse import quote

import orjson
from pydantic import BaseModel, ConfigDict, Field, HttpUrl, field_validator, model_validator

from tidegate.components.base import Component
from tidegate.components.destinations.http_sender import Unsettled
from tidegate.components.destinations.outbound import outbound_component
from tidegate.components.destinations.wire import (
    MAX_BODY_BYTES,
    Auth,
    Compression,
    Template,
    WireRequest,
    auth_headers,
    batched,
    compress,
)
from tidegate.logs.timestamps import epoch_ms

__all__ = [
    "COMPONENT",
    "ElasticsearchConfig",
    "bulk_accepted",
    "bulk_unsettled",
    "elasticsearch_requests",
]

_STRFTIME: Final = re.compile(r"%[YmdH]")
_ERRORS_TRUE: Final = re.compile(rb'"errors"\s*:\s*true')
FILTER_PATH: Final = "filter_path=errors,items.*.error,items.*.status"
"""The answer's parts read (Logstash's): about 25 bytes per document taken."""
ANSWER_BYTES: Final = 4 * 1024 * 1024
"""Of a bulk answer, read at most this (a longer one sends its request again whole)."""


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
    url = base + "/_bulk?" + FILTER_PATH
    if config.pipeline:
        url += "&pipeline=" + quote(config.pipeline, safe="")
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


def bulk_unsettled(request: WireRequest, answer: bytes) -> Unsettled | None:
    """What a 2xx bulk answer left undone: None when it took every document; else the
    body of the items to send again (429, 5xx), in the request's order and encoding,
    and the count of those refused for good."""
    if _ERRORS_TRUE.search(answer) is None:
        return None
    gzipped = any(
        name.lower() == "content-encoding" and value == "gzip" for name, value in request.headers
    )
    body = gzip.decompress(request.body) if gzipped else request.body
    lines = body.split(b"\n")[:-1]
    try:
        items = orjson.loads(answer)["items"]
        statuses = [int(next(iter(item.values()))["status"]) for item in items]
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, StopIteration):
        statuses = []
    if not statuses or len(lines) != 2 * len(statuses):
        return Unsettled(request.body, retry_items=len(lines) // 2)  # the whole request again
    again: list[bytes] = []
    refused = 0
    reason = ""
    for number, status in enumerate(statuses):
        if status == 429 or status >= 500:
            again.append(lines[2 * number] + b"\n" + lines[2 * number + 1] + b"\n")
        elif not 200 <= status < 300:
            refused += 1
            reason = reason or _item_reason(items[number], status)
    retry = None
    if again:
        retry, _ = compress(b"".join(again), "gzip" if gzipped else "none")
    return Unsettled(retry, retry_items=len(again), refused=refused, reason=reason)


def _item_reason(item: Any, status: int) -> str:
    error = next(iter(item.values())).get("error")
    if isinstance(error, dict):
        return f"HTTP {status} {error.get('type', '')}: {str(error.get('reason', ''))[:300]}"
    return f"HTTP {status}"


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
    settle=bulk_unsettled,
    response_bytes=ANSWER_BYTES,
    rotating=True,
)

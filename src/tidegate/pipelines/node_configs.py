"""Per-type validation of a node's ``user_config``.

The Throttle processor's configuration and the condition language belong to the
processing library (``tidegate.processing``); this module only picks the right model
for a node type and turns its complaints into the v3 validation error, with JSON
Pointers into the request body (``/user_config/threshold``).

The configuration is stored exactly as the client sent it (once it validates), so that
clients such as Terraform read back what they wrote; the data plane validates it again
with the same models when it builds a running pipeline.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Annotated, Any, Final, Literal

import httpcore
from pydantic import BaseModel, ConfigDict, Field, HttpUrl, ValidationError, field_validator

from tidegate.api.validation import translate
from tidegate.errors import ErrorItem, ValidationFailed
from tidegate.processing.conditions import Condition, ConditionError
from tidegate.processing.throttle.config import ThrottleConfig
from tidegate.runtime.destination_guard import DestinationPolicy, DestinationRefused

__all__ = [
    "CONFIG_MODELS",
    "FilterConfig",
    "HttpDestinationConfig",
    "config_model",
    "validate_user_config",
    "vet_destination",
]

_MAX_DEPTH: Final = 32


class _NoOptions(BaseModel):
    """Types without options: ``user_config`` must be an empty object."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class HttpSourceConfig(_NoOptions):
    """An HTTP source takes its events from its gateway route; it has no options."""


class LogAnalysisConfig(_NoOptions):
    """The account's own log store."""


class BlackholeConfig(_NoOptions):
    """Discards everything it receives."""


class FilterConfig(BaseModel):
    """The Filter processor: ``allow`` keeps the events matching ``condition``, ``drop``
    discards them and keeps the rest."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    condition: Condition
    action: Literal["allow", "drop"] = "allow"


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


CONFIG_MODELS: Final[dict[tuple[str, str], type[BaseModel]]] = {
    ("source", "http"): HttpSourceConfig,
    ("processor", "throttle"): ThrottleConfig,
    ("processor", "filter"): FilterConfig,
    ("destination", "log_analysis"): LogAnalysisConfig,
    ("destination", "http"): HttpDestinationConfig,
    ("destination", "blackhole"): BlackholeConfig,
}


def config_model(kind: str, type_: str) -> type[BaseModel]:
    """The configuration model of a node type (for the data plane as for validation)."""
    return CONFIG_MODELS[(kind, type_)]


def validate_user_config(*, kind: str, type_: str, user_config: dict[str, Any]) -> BaseModel:
    """Validate ``user_config`` for a node type; raises the v3 validation error naming
    each failing field under ``/user_config``."""
    unstorable = list(_unstorable(user_config, ["user_config"], 0))
    if unstorable:
        raise _failed(unstorable)
    try:
        return config_model(kind, type_).model_validate(user_config)
    except ValidationError as error:
        raise _failed(_items(error)) from None


async def vet_destination(config: BaseModel, *, policy: DestinationPolicy) -> None:
    """An http destination whose host is, or resolves now to, a non-public address the
    operator did not allow is refused (400 on ``/user_config/uri``). A name that does
    not resolve yet is accepted: the check is made again at every connection."""
    if not isinstance(config, HttpDestinationConfig):
        return
    host = config.uri.host or ""
    try:
        await policy.resolve(host, config.uri.port or 443)
    except DestinationRefused as error:
        raise _failed(
            [
                ErrorItem(
                    keyword="format",
                    message=f"must not target a non-public address: {error}",
                    instance_path="/user_config/uri",
                    schema_path="#/properties/uri/format",
                    params={"format": "uri"},
                )
            ]
        ) from None
    except httpcore.ConnectError:
        pass


def _failed(items: list[ErrorItem]) -> ValidationFailed:
    for item in items:
        # The spec caps both pointers at 200 chars; user_config keys are the client's.
        item.instance_path = item.instance_path[:200] if item.instance_path else None
        item.schema_path = item.schema_path[:200] if item.schema_path else None
    first = items[0]
    where = (first.instance_path or "").replace("/", ".")
    return ValidationFailed(f"body{where} {first.message}", context="body", errors=items)


def _items(error: ValidationError) -> list[ErrorItem]:
    raw: list[dict[str, Any]] = []
    for item in error.errors(include_url=False):
        loc: list[str | int] = ["body", "user_config", *item["loc"]]
        entry: dict[str, Any] = {"type": item["type"], "loc": loc, "msg": item["msg"]}
        if "ctx" in item:
            entry["ctx"] = item["ctx"]
        cause = (item.get("ctx") or {}).get("error")
        if isinstance(cause, ConditionError):
            # Point into the condition itself: /user_config/exclude/expressions/0/value.
            entry["loc"] = loc + _condition_path(cause.location)
            entry["msg"] = cause.reason
            entry.pop("ctx", None)
        raw.append(entry)
    _context, items = translate(raw)
    return items


_SEGMENT = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _condition_path(location: str) -> list[str | int]:
    """``expressions[1].value`` as pointer segments ``["expressions", 1, "value"]``."""
    parts: list[str | int] = []
    for name, index in _SEGMENT.findall(location):
        parts.append(int(index) if index else name)
    return parts


def _unstorable(value: Any, path: Sequence[str | int], depth: int) -> list[ErrorItem]:
    """JSON the databases cannot hold (NaN, NUL, lone surrogates) or absurdly deep."""
    if depth > _MAX_DEPTH:
        return [_item(path, f"must not nest deeper than {_MAX_DEPTH} levels")]
    if isinstance(value, float) and not math.isfinite(value):
        return [_item(path, "must be a finite number")]
    if isinstance(value, str):
        return [] if _storable_text(value) else [_item(path, "must be valid text without NUL")]
    found: list[ErrorItem] = []
    if isinstance(value, dict):
        for key, child in value.items():
            if not _storable_text(key):
                found.append(_item(path, "property names must be valid text without NUL"))
                continue
            found.extend(_unstorable(child, [*path, key], depth + 1))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found.extend(_unstorable(child, [*path, index], depth + 1))
    return found[:20]


def _storable_text(text: str) -> bool:
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _item(path: Sequence[str | int], message: str) -> ErrorItem:
    pointer = "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)
    return ErrorItem(keyword="validation", message=message, instance_path=pointer, params={})

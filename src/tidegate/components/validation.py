"""Validation of a node's ``user_config`` against its component's model.

The registry picks the model; this module turns its complaints into the v3 validation
error, with JSON Pointers into the request body (``/user_config/threshold``, and into
a condition: ``/user_config/exclude/expressions/0/value``).

The configuration is stored exactly as the client sent it (once it validates), so that
clients such as Terraform read back what they wrote; the data plane validates it again
with the same model when it builds a running pipeline.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any, Final

from pydantic import BaseModel, ValidationError

from tidegate.api.validation import translate
from tidegate.components.catalogue import REGISTRY
from tidegate.components.registry import Registry, UnknownComponent
from tidegate.errors import ErrorItem, ValidationFailed
from tidegate.kit.destination_guard import DestinationPolicy
from tidegate.processing.conditions import ConditionError

__all__ = ["config_error", "node_outputs", "validate_user_config", "vet_config"]

_MAX_DEPTH: Final = 32


def validate_user_config(
    *, kind: str, type_: str, user_config: dict[str, Any], registry: Registry = REGISTRY
) -> BaseModel:
    """Validate ``user_config`` for a node type; raises the v3 validation error naming
    each failing field under ``/user_config`` (an unknown type under ``/type``)."""
    try:
        component = registry.get(kind, type_)
    except (UnknownComponent, KeyError):
        raise _failed(
            [
                ErrorItem(
                    keyword="enum",
                    message=f"must be one of the {kind} types: "
                    + ", ".join(registry.names(kind) if kind in _KINDS else []),
                    instance_path="/type",
                    params={"allowedValues": registry.names(kind) if kind in _KINDS else []},
                )
            ]
        ) from None
    unstorable = list(_unstorable(user_config, ["user_config"], 0))
    if unstorable:
        raise _failed(unstorable)
    try:
        config: BaseModel = component.config_model.model_validate(user_config)
    except ValidationError as error:
        raise config_error(error) from None
    return config


_KINDS: Final = frozenset({"source", "processor", "transform", "destination", "sink"})


def node_outputs(
    *, kind: str, type_: str, user_config: dict[str, Any], registry: Registry = REGISTRY
) -> tuple[str, ...]:
    """The names of a node's outputs beside its main one; none when the stored
    configuration no longer validates (the compiler reports that)."""
    component = registry.find(kind, type_) if kind in _KINDS else None
    if component is None:
        return ()
    try:
        config = component.config_model.model_validate(user_config)
    except ValidationError:
        return ()
    return tuple(component.outputs(config))


async def vet_config(
    config: BaseModel,
    *,
    kind: str,
    type_: str,
    policy: DestinationPolicy,
    registry: Registry = REGISTRY,
) -> None:
    """The component's save-time checks that need I/O (an http destination's host)."""
    component = registry.get(kind, type_)
    if component.vet is not None:
        await component.vet(config, policy)


def config_error(error: ValidationError) -> ValidationFailed:
    """A pydantic error of a configuration model as the v3 error under ``/user_config``."""
    return _failed(_items(error))


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

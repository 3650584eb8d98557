"""Turning pydantic's validation errors into the spec's ``errors[]`` items.

``keyword`` is the JSON-Schema keyword that failed (AJV's vocabulary, which the real
platform's clients know), ``instance_path`` a JSON Pointer into the request part,
``schema_path`` a JSON Pointer to the failing keyword in that part's schema.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from tidegate.errors import Context, ErrorItem

_LOCATIONS: dict[str, Context] = {
    "body": "body",
    "query": "querystring",
    "path": "params",
    "header": "headers",
    "cookie": "headers",
}

_TYPE_NAMES = {
    "string": "string",
    "int": "integer",
    "bool": "boolean",
    "float": "number",
    "list": "array",
    "dict": "object",
    "model": "object",
    "model_attributes": "object",
    "none_required": "null",
}


def _pointer(parts: Sequence[str | int]) -> str:
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in parts)


def _schema_pointer(parts: Sequence[str | int]) -> str:
    segments = ["#"]
    for part in parts:
        segments.append("items" if isinstance(part, int) else f"properties/{part}")
    return "/".join(segments)


def _expected_values(ctx: dict[str, Any]) -> list[str]:
    return re.findall(r"'([^']*)'", str(ctx.get("expected", "")))


def _keyword(kind: str, ctx: dict[str, Any], msg: str) -> tuple[str, dict[str, Any], str]:
    """(keyword, params, AJV-style message) for one pydantic error type."""
    if kind == "string_too_long":
        limit = ctx.get("max_length")
        return "maxLength", {"limit": limit}, f"must NOT have more than {limit} characters"
    if kind == "string_too_short":
        limit = ctx.get("min_length")
        return "minLength", {"limit": limit}, f"must NOT have fewer than {limit} characters"
    if kind == "too_long":
        limit = ctx.get("max_length")
        return "maxItems", {"limit": limit}, f"must NOT have more than {limit} items"
    if kind == "too_short":
        limit = ctx.get("min_length")
        return "minItems", {"limit": limit}, f"must NOT have fewer than {limit} items"
    bounds = {
        "greater_than_equal": ("minimum", ">=", "ge"),
        "less_than_equal": ("maximum", "<=", "le"),
        "greater_than": ("exclusiveMinimum", ">", "gt"),
        "less_than": ("exclusiveMaximum", "<", "lt"),
    }
    if kind in bounds:
        keyword, comparison, key = bounds[kind]
        limit = ctx.get(key)
        return keyword, {"comparison": comparison, "limit": limit}, f"must be {comparison} {limit}"
    if kind in ("literal_error", "enum"):
        allowed = _expected_values(ctx)
        return "enum", {"allowedValues": allowed}, "must be equal to one of the allowed values"
    if kind == "string_pattern_mismatch":
        pattern = ctx.get("pattern")
        return "pattern", {"pattern": pattern}, f'must match pattern "{pattern}"'
    if kind.startswith(("datetime_", "date_")):
        return "format", {"format": "date-time"}, 'must match format "date-time"'
    if kind.startswith("url_"):
        return "format", {"format": "uri"}, 'must match format "uri"'
    if kind == "value_error" and "email" in msg:
        return "format", {"format": "email"}, 'must match format "email"'
    if kind == "uuid_parsing" or kind == "uuid_type":
        return "format", {"format": "uuid"}, 'must match format "uuid"'
    for prefix, type_name in _TYPE_NAMES.items():
        if kind in (f"{prefix}_type", f"{prefix}_parsing", f"{prefix}_from_float"):
            return "type", {"type": type_name}, f"must be {type_name}"
    if kind == "int_from_float":
        return "type", {"type": "integer"}, "must be integer"
    # Rules written as validators (cross-field checks and the like) carry their own text.
    text = msg.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    return "validation", {}, text


def translate(errors: Sequence[Any]) -> tuple[Context, list[ErrorItem]]:
    """The request part that failed first, and one item per failed rule."""
    items: list[ErrorItem] = []
    context: Context | None = None
    for error in errors:
        loc = tuple(error.get("loc", ()))
        where = _LOCATIONS.get(str(loc[0]) if loc else "body", "body")
        context = context or where
        path = [part for part in loc[1:] if isinstance(part, (str, int))]
        kind = str(error.get("type", "value_error"))
        ctx = error.get("ctx") or {}
        if kind == "missing" and not path:
            # The whole body (or query, or header set) is absent: it is not an object.
            items.append(
                ErrorItem(
                    keyword="type",
                    message="must be object",
                    instance_path="",
                    schema_path="#/type",
                    params={"type": "object"},
                )
            )
            continue
        if kind == "missing":
            name = str(path[-1])
            parent = path[:-1]
            items.append(
                ErrorItem(
                    keyword="required",
                    message=f"must have required property '{name}'",
                    instance_path=_pointer(parent),
                    schema_path=_schema_pointer(parent) + "/required",
                    params={"missingProperty": name},
                )
            )
            continue
        if kind == "extra_forbidden":
            name = str(path[-1]) if path else ""
            parent = path[:-1]
            items.append(
                ErrorItem(
                    keyword="additionalProperties",
                    message="must NOT have additional properties",
                    instance_path=_pointer(parent),
                    schema_path=_schema_pointer(parent) + "/additionalProperties",
                    params={"additionalProperty": name},
                )
            )
            continue
        keyword, params, message = _keyword(kind, ctx, str(error.get("msg", "")))
        items.append(
            ErrorItem(
                keyword=keyword,
                message=message,
                instance_path=_pointer(path),
                schema_path=_schema_pointer(path) + "/" + keyword,
                params=params,
            )
        )
    return context or "body", items

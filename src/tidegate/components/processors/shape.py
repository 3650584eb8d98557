"""Shared by the processors that reshape values: walks bounded in depth and size."""

from __future__ import annotations

from typing import Any, Final

__all__ = ["MAX_DEPTH", "MAX_KEYS", "compact", "flatten"]

MAX_DEPTH: Final = 32
"""Deeper values are kept as they are."""
MAX_KEYS: Final = 10_000
"""Keys one flattened object holds at most; the rest stay nested under their prefix."""


def flatten(value: dict[str, Any], delimiter: str) -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}``; arrays and empty objects stay values."""
    out: dict[str, Any] = {}
    stack: list[tuple[str, Any, int]] = [(key, item, 1) for key, item in value.items()]
    stack.reverse()
    while stack:
        key, item, depth = stack.pop()
        if isinstance(item, dict) and item and depth < MAX_DEPTH and len(out) < MAX_KEYS:
            children = [(f"{key}{delimiter}{k}", v, depth + 1) for k, v in item.items()]
            children.reverse()
            stack.extend(children)
        else:
            out[key] = item
    return out


def compact(value: Any, *, arrays: bool, objects: bool, depth: int = 0) -> Any:
    """Without nulls, and without empty arrays / objects when asked (recursively; a
    container emptied by compaction goes too)."""
    if depth >= MAX_DEPTH:
        return value
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            item = compact(item, arrays=arrays, objects=objects, depth=depth + 1)
            if _kept(item, arrays, objects):
                out[key] = item
        return out
    if isinstance(value, list):
        items = [compact(item, arrays=arrays, objects=objects, depth=depth + 1) for item in value]
        return [item for item in items if _kept(item, arrays, objects)]
    return value


def _kept(item: Any, arrays: bool, objects: bool) -> bool:
    if item is None:
        return False
    if arrays and isinstance(item, list) and not item:
        return False
    return not (objects and isinstance(item, dict) and not item)

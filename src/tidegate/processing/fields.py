"""Event field paths (`.app`, `.meta.user.id`, `.tags[0]`) and the string form of values.

Events are JSON objects decoded into Python dicts. A path reads nested keys; it never
raises on a missing key or a value of the wrong type, it returns `MISSING` instead, so
that "absent" and "null" stay distinguishable.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, final

__all__ = [
    "MISSING",
    "FieldPath",
    "FieldPathError",
    "Getter",
    "string_form",
    "with_value",
    "without",
]


@final
class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Final = _Missing()
"""Returned by a getter when the path does not lead to a value."""

Getter = Callable[[Any], Any]
Segment = str | int


class FieldPathError(ValueError):
    """A field path that cannot be parsed."""


_MAX_PATH_LENGTH = 1024


@dataclass(frozen=True, slots=True)
class FieldPath:
    """A parsed event field path.

    Syntax: `.` alone is the whole event; otherwise a sequence of `.name` segments,
    `."quoted name"` segments (for names holding dots, spaces or brackets) and `[n]`
    array indexes (negative counts from the end). A leading dot may be left out
    (`app` means `.app`).
    """

    text: str
    segments: tuple[Segment, ...]

    @classmethod
    def parse(cls, text: str) -> FieldPath:
        if not isinstance(text, str):
            raise FieldPathError("a field path must be a string such as '.app'")
        if not text.strip():
            raise FieldPathError("a field path must not be blank")
        if len(text) > _MAX_PATH_LENGTH:
            raise FieldPathError(f"a field path is at most {_MAX_PATH_LENGTH} characters")
        if text == ".":
            return cls(text, ())
        source = text if text[0] in ".[" else "." + text
        return cls(text, tuple(_parse_segments(source, text)))

    @property
    def is_root(self) -> bool:
        return not self.segments

    @property
    def single_key(self) -> str | None:
        """The key when the path is one plain key (`.app`), for inlined lookups."""
        if len(self.segments) == 1 and isinstance(self.segments[0], str):
            return self.segments[0]
        return None

    def getter(self) -> Getter:
        """A function reading this path from an event, returning `MISSING` if absent."""
        segments = self.segments
        if not segments:
            return _identity
        if len(segments) == 1:
            only = segments[0]
            if isinstance(only, str):
                return lambda event: (
                    event.get(only, MISSING) if event.__class__ is dict else _lookup(event, only)
                )
        return lambda event: _walk(event, segments)

    def __str__(self) -> str:
        return self.text


def _identity(event: Any) -> Any:
    return event


def _lookup(current: Any, segment: Segment) -> Any:
    if isinstance(segment, str):
        if isinstance(current, dict):
            return current.get(segment, MISSING)
        return MISSING
    if isinstance(current, list):
        try:
            return current[segment]
        except IndexError:
            return MISSING
    return MISSING


def _walk(event: Any, segments: tuple[Segment, ...]) -> Any:
    current = event
    for segment in segments:
        current = _lookup(current, segment)
        if current is MISSING:
            return MISSING
    return current


def _parse_segments(source: str, original: str) -> list[Segment]:
    segments: list[Segment] = []
    i, n = 0, len(source)
    while i < n:
        char = source[i]
        if char == ".":
            i += 1
            if i >= n:
                raise FieldPathError(f"field path {original!r} ends with a dot")
            if source[i] == '"':
                name, i = _parse_quoted(source, i, original)
                segments.append(name)
                continue
            start = i
            while i < n and source[i] not in '.["]':
                i += 1
            if i == start:
                raise FieldPathError(f"field path {original!r} has an empty segment")
            segments.append(source[start:i])
        elif char == "[":
            end = source.find("]", i)
            if end < 0:
                raise FieldPathError(f"field path {original!r} has an unclosed '['")
            index_text = source[i + 1 : end].strip()
            try:
                segments.append(int(index_text))
            except ValueError:
                raise FieldPathError(
                    f"field path {original!r}: an index in [] must be an integer"
                ) from None
            i = end + 1
        else:
            raise FieldPathError(f"field path {original!r}: unexpected {char!r} at {i}")
    return segments


def _parse_quoted(source: str, i: int, original: str) -> tuple[str, int]:
    # `i` points at the opening quote.
    chars: list[str] = []
    i += 1
    n = len(source)
    while i < n:
        char = source[i]
        if char == "\\" and i + 1 < n:
            chars.append(source[i + 1])
            i += 2
            continue
        if char == '"':
            return "".join(chars), i + 1
        chars.append(char)
        i += 1
    raise FieldPathError(f"field path {original!r} has an unclosed quote")


def string_form(value: Any) -> str:
    """The string a non-string value compares as: its compact JSON text."""
    if isinstance(value, str):
        return value
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return json.dumps(value)
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False, default=str)


def _copied(container: Any) -> Any:
    if isinstance(container, dict):
        return dict(container)
    if isinstance(container, list):
        return list(container)
    return container


def with_value(event: dict[str, Any], path: FieldPath, value: Any) -> dict[str, Any]:
    """A copy of ``event`` with ``value`` at ``path``; the event itself is not changed
    (containers along the path are copied, the rest is shared). Missing objects along
    the path are created; a list index past the end, or a path through a scalar,
    replaces nothing and returns the event unchanged. The root path replaces the event
    when ``value`` is an object."""
    if not path.segments:
        return value if isinstance(value, dict) else event
    root = dict(event)
    current: Any = root
    segments = path.segments
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if isinstance(segment, str):
            if not isinstance(current, dict):
                return event
            if last:
                current[segment] = value
                return root
            child = current.get(segment, MISSING)
            child = {} if child is MISSING or not isinstance(child, dict | list) else child
            child = _copied(child)
            current[segment] = child
            current = child
        else:
            if not isinstance(current, list) or not -len(current) <= segment < len(current):
                return event
            if last:
                current[segment] = value
                return root
            child = _copied(current[segment])
            current[segment] = child
            current = child
    return root


def without(event: dict[str, Any], path: FieldPath) -> dict[str, Any]:
    """A copy of ``event`` without the value at ``path`` (the event itself when there is
    nothing to remove). Removing from a list shifts the later items."""
    if not path.segments or _walk(event, path.segments) is MISSING:
        return event
    root = dict(event)
    current: Any = root
    *parents, leaf = path.segments
    for segment in parents:
        child = _copied(current[segment])
        current[segment] = child
        current = child
    del current[leaf]
    return root

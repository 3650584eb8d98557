"""Reading a large JSON document a piece at a time, so a worker thread parsing a 10 MB
body gives the event loop the interpreter between pieces.

orjson parses a whole document in one C call that holds the GIL: for a 10 MB body of
small elements that is a few hundred milliseconds in which the event loop, though on
another thread, cannot run (measured: /healthz p99 233 ms while 10 MB ingest bodies
arrived). The standard library's C scanner parses one value at a given offset; walking
the outer object and array here, one element per call, lets the interpreter switch
threads between elements, and lets the caller stop at a count cap without parsing the
rest of the body.

Nothing here imports the project: both the ingestion and the gateway parsers use it.
"""

from __future__ import annotations

import json
import json.scanner
import re
from collections.abc import Callable, Iterator
from typing import Any, Final

__all__ = [
    "JsonStreamError",
    "Scanner",
    "make_scanner",
    "object_members",
    "read_array",
    "skip_space",
]

Scanner = Callable[[str, int], tuple[Any, int]]

_SPACE: Final = re.compile(r"[ \t\r\n]*")


class JsonStreamError(ValueError):
    """The text is not valid JSON; the message says where."""


def make_scanner(decoder: json.JSONDecoder) -> Scanner:
    """The C scanner of ``decoder``: ``scan(text, offset) -> (value, end)``."""
    scanner: Scanner = json.scanner.make_scanner(decoder)  # type: ignore[arg-type]  # typeshed
    return scanner


def skip_space(source: str, position: int) -> int:
    match = _SPACE.match(source, position)
    return position if match is None else match.end()


def _value(scan: Scanner, source: str, position: int, what: str) -> tuple[Any, int]:
    try:
        return scan(source, position)
    except StopIteration:
        raise JsonStreamError(f"{what} is not a value") from None
    except RecursionError:
        raise JsonStreamError(f"{what} is nested too deeply") from None
    except ValueError as error:  # json.JSONDecodeError and the parse hooks' refusals
        raise JsonStreamError(f"{what}: {error}") from None


def read_array(
    scan: Scanner,
    source: str,
    position: int,
    *,
    limit: int,
    too_many: Callable[[], Exception],
    each: Callable[[Any, int], Any] | None = None,
    name: str = "element",
) -> tuple[list[Any], int]:
    """The array that starts at ``source[position]`` (a ``[``), read one element at a
    time, and the offset just past it. ``each(value, index)`` may check or replace each
    element as it is read; the element past ``limit`` raises ``too_many()`` before the
    rest of the array is parsed."""
    if source[position : position + 1] != "[":
        raise JsonStreamError("expected an array")
    items: list[Any] = []
    position = skip_space(source, position + 1)
    if source.startswith("]", position):
        return items, position + 1
    while True:
        index = len(items)
        if index >= limit:
            raise too_many()
        value, position = _value(scan, source, position, f"{name} {index}")
        items.append(value if each is None else each(value, index))
        position = skip_space(source, position)
        separator = source[position : position + 1]
        if separator == "]":
            return items, position + 1
        if separator != ",":
            raise JsonStreamError(f"expected ',' or ']' after {name} {index}")
        position = skip_space(source, position + 1)


def object_members(
    scan: Scanner,
    source: str,
    position: int,
    *,
    read_value: Callable[[str, int], tuple[Any, int]] | None = None,
) -> Iterator[tuple[str, Any]]:
    """The members of the object that starts at ``source[position]`` (a ``{``), in
    order (a repeated name comes again: the caller keeps the last, as JSON parsers do).
    ``read_value(name, offset) -> (value, end)`` may read a member's value itself (to
    walk a large array piece by piece); returning ``NotImplemented`` as the value falls
    back to scanning it whole. The object must be the whole rest of ``source``."""
    if source[position : position + 1] != "{":
        raise JsonStreamError("expected an object")
    position = skip_space(source, position + 1)
    if source.startswith("}", position):
        _expect_end(source, position + 1)
        return
    while True:
        if source[position : position + 1] != '"':
            raise JsonStreamError("expected a member name")
        name, position = _value(scan, source, position, "a member name")
        position = skip_space(source, position)
        if source[position : position + 1] != ":":
            raise JsonStreamError(f"expected ':' after {name!r}")
        position = skip_space(source, position + 1)
        value: Any = NotImplemented
        if read_value is not None:
            value, end = read_value(name, position)
        if value is NotImplemented:
            value, end = _value(scan, source, position, repr(name))
        yield name, value
        position = skip_space(source, end)
        separator = source[position : position + 1]
        position = skip_space(source, position + 1)
        if separator == "}":
            _expect_end(source, position)
            return
        if separator != ",":
            raise JsonStreamError(f"expected ',' or '}}' after {name!r}")


def _expect_end(source: str, position: int) -> None:
    if skip_space(source, position) != len(source):
        raise JsonStreamError("data after the document")

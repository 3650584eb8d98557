"""The one JSON codec for log data (docs/decisions.md, "JSON values a line can hold").

orjson first (strict and fast); what it refuses is read or written once more by the
standard library and normalised the same way on every path:

* ``NaN``, ``Infinity``, ``-Infinity`` and numbers past a double's range become
  ``null``: the key stays, and so does the rest of the object;
* integers outside 64 bits (below -2**63, from 2**64) become the nearest double, as
  orjson reads them (``null`` past a double's range);
* lone UTF-16 surrogates (``"\\ud800"``, which UTF-8 cannot carry) become U+FFFD.

Foundation layer: imports nothing of tidegate.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Final

import orjson

__all__ = [
    "OTHER_SPELLING_REGEXP",
    "dumps",
    "in_own_spelling",
    "loads",
    "plain",
    "read_constant",
    "read_float",
    "repaired",
]

_MIN_INT: Final = -(2**63)
_MAX_INT: Final = 2**64  # exclusive
# More digits than any 64-bit integer has: a double without calling int() (which
# refuses texts past 4,300 digits).
_MAX_INT_DIGITS: Final = 20


def loads(data: str | bytes) -> Any:
    """JSON text as plain values, normalised as above; ``ValueError`` when it is not JSON
    (nor what Python's ``json.dumps`` writes for non-finite floats)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as error:
        strict_error = error
    try:
        value = json.loads(
            data, parse_constant=read_constant, parse_int=_int, parse_float=read_float
        )
    except (ValueError, RecursionError):
        raise ValueError(str(strict_error)) from None
    return repaired(value)


def dumps(value: Any) -> bytes:
    """``value`` as JSON bytes; what JSON cannot hold is normalised (``plain``) first."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return orjson.dumps(plain(value))


def plain(value: Any) -> Any:
    """``value`` as JSON can hold it (normalised as above; keys as strings, other objects
    as their ``str``); the value itself when nothing needs changing. A ``Fragment`` is
    text ``in_own_spelling``: kept as it is."""
    if isinstance(value, orjson.Fragment):
        return value
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value if _MIN_INT <= value < _MAX_INT else _big_int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {_text(str(key)): plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return _text(str(value))


# Every byte a digit or not: a run of ``_BIG_RUN_LENGTH`` digits is an integer past 64
# bits (or digits in a string, which only costs the slow path).
_DIGITS: Final = bytes(48 if 48 <= byte <= 57 else 32 for byte in range(256))
_BIG_RUN_LENGTH: Final = 20
_BIG_RUN: Final = b"0" * _BIG_RUN_LENGTH
# What ``in_own_spelling`` refuses besides such a run; ``": `` first (jsonb's text fails
# there, early).
_OTHER_SPELLINGS: Final = ('": ', "\\", "e-0", "NaN", "Infinity")
# The same rules as one regexp, for SQL that tells it where the text is stored
# (``logs.segments``: DuckDB's RE2, linear in the text): it matches where
# ``in_own_spelling`` refuses an object.
OTHER_SPELLING_REGEXP: Final = "|".join(
    [
        *(re.sub(r"([\\.^$|?*+()\[\]{}])", r"\\\1", marker) for marker in _OTHER_SPELLINGS),
        f"[0-9]{{{_BIG_RUN_LENGTH}}}",
    ]
)


def in_own_spelling(text: str) -> bool:
    """Whether ``text``, a JSON object some tidegate writer stored, is already what
    ``dumps(loads(text))`` writes, so it can be sent as it is (``orjson.Fragment``).

    A sufficient test, cheaper than decoding: the store's own writer
    (``logs.store.document_json``) writes orjson's spelling, which passes, except where it
    falls back to the standard library; every other spelling a writer stores fails it.
    It refuses an object with a backslash (any escape: ``\\uXXXX`` of an ASCII-only
    writer, lone surrogates), with ``": `` (a space after a key: the standard library's
    default separators, PostgreSQL's jsonb text; outside strings, as no quote is
    escaped), a float as ``repr`` writes it where orjson does not (``1e-07``; orjson
    writes ``1e-7`` or ``0.000015``), ``NaN`` and ``Infinity`` (which orjson refuses to
    read), and a run of 20 digits (an integer past 64 bits, which ``loads`` makes a
    float). Text that only looks like one of these (in a string) takes the slow path.
    Numbers are trusted past that: no writer of the store spells one otherwise than
    Python or orjson do (``1E+2`` or ``1.50`` would pass through as they are)."""
    if text[:1] != "{":
        return False
    for marker in _OTHER_SPELLINGS:
        if marker in text:
            return False
    return _BIG_RUN not in text.encode().translate(_DIGITS)


def read_constant(_text: str) -> None:
    """``parse_constant`` of a stdlib decoder: ``NaN``, ``Infinity`` read as null."""
    return None


def read_float(text: str) -> float | None:
    """``parse_float`` of a stdlib decoder: a number past a double's range reads as null."""
    value = float(text)
    return value if math.isfinite(value) else None


def _int(text: str) -> int | float | None:
    if len(text.lstrip("-")) > _MAX_INT_DIGITS:
        return read_float(text)
    value = int(text)
    return value if _MIN_INT <= value < _MAX_INT else _big_int(value)


def _big_int(value: int) -> float | None:
    try:
        return float(value)
    except OverflowError:
        return None


def repaired(value: Any) -> Any:
    """Decoded JSON with its lone surrogates (in strings and keys) made U+FFFD."""
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, list):
        return [repaired(item) for item in value]
    if isinstance(value, dict):
        return {_text(key): repaired(item) for key, item in value.items()}
    return value


def _text(value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        # Valid pairs are joined, lone halves become U+FFFD.
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return value

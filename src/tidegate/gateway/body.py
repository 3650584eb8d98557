"""The body forms of ``POST /gateway/{id}``: one JSON object, a JSON array of objects,
or newline-delimited JSON (one object per line, blank lines skipped). A body with
``Content-Type: application/x-ndjson`` (or ``application/ndjson``, ``application/jsonl``)
is read as NDJSON only; otherwise the form is recognised from the text. ``Content-Encoding:
gzip`` bodies are inflated first (to at most 10 MiB)."""

from __future__ import annotations

import zlib
from typing import Any, Final

import orjson

from tidegate.api.body_guard import INGEST_MAX_BYTES
from tidegate.errors import BadRequest, PayloadTooLarge, UnsupportedMediaType

__all__ = ["parse_events"]

_NDJSON_TYPES: Final = frozenset(
    {"application/x-ndjson", "application/ndjson", "application/jsonl", "application/x-jsonlines"}
)
_WHITESPACE: Final = b" \t\r\n"


def _inflate(body: bytes) -> bytes:
    inflater = zlib.decompressobj(wbits=47)  # gzip or zlib header
    try:
        data = inflater.decompress(body, INGEST_MAX_BYTES + 1)
    except zlib.error as error:
        raise BadRequest(f"Body is not valid gzip: {error}") from None
    if len(data) > INGEST_MAX_BYTES or inflater.unconsumed_tail:
        raise PayloadTooLarge(f"Inflated body exceeds {INGEST_MAX_BYTES} bytes")
    return data


def _media(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def parse_events(
    body: bytes, *, content_type: str | None = None, content_encoding: str | None = None
) -> list[dict[str, Any]]:
    encoding = (content_encoding or "").strip().lower()
    if encoding in ("gzip", "x-gzip", "deflate"):
        body = _inflate(body)
    elif encoding not in ("", "identity"):
        raise UnsupportedMediaType(f"Content-Encoding {encoding!r} is not supported")
    text = body.strip(_WHITESPACE)
    if not text:
        raise BadRequest("Empty body: send a JSON object, an array of objects or NDJSON")
    if _media(content_type) in _NDJSON_TYPES:
        return _ndjson(text)
    if text[:1] == b"[":
        return _array(text)
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        if b"\n" in text:
            return _ndjson(text)
        raise BadRequest("Body is not valid JSON") from None
    if not isinstance(value, dict):
        raise BadRequest(
            f"Body must be a JSON object, an array of objects or NDJSON, not {_kind(value)}"
        )
    return [value]


def _array(text: bytes) -> list[dict[str, Any]]:
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as error:
        raise BadRequest(f"Body is not valid JSON: {error}") from None
    assert isinstance(value, list)
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise BadRequest(f"Element {index} of the array is {_kind(item)}, not an object")
    return value


def _ndjson(text: bytes) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for number, raw in enumerate(text.split(b"\n"), start=1):
        line = raw.strip(_WHITESPACE)
        if not line:
            continue
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError as error:
            raise BadRequest(f"Line {number} is not valid JSON: {error}") from None
        if not isinstance(value, dict):
            raise BadRequest(f"Line {number} is {_kind(value)}, not a JSON object")
        events.append(value)
    return events


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "null" if value is None else "an object"

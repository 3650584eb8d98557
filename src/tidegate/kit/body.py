"""The body forms of ``POST /gateway/{id}``: one JSON object, a JSON array of objects,
or newline-delimited JSON (one object per line, blank lines skipped). A body with
``Content-Type: application/x-ndjson`` (or ``application/ndjson``, ``application/jsonl``)
is read as NDJSON only; otherwise the form is recognised from the text.

``Content-Encoding: gzip`` bodies are inflated member by member (``cat a.gz b.gz`` is
one valid gzip stream), ``deflate`` bodies with or without the zlib header, ``snappy``
bodies (the block format, as Prometheus remote write sends them; the length in their
header is checked before anything is inflated), ``zstd`` bodies (one or more frames, as
the Datadog Agent sends them, inflated into a buffer of the limit), all to at most
10 MiB in total; a truncated stream is a 400, not a silently shorter batch.

At most ``MAX_EVENTS`` events per request (413 beyond). An array is parsed one element
at a time, so a body of a million tiny elements is refused at element ``MAX_EVENTS + 1``
(or at its first non-object) without building the rest: memory stays proportional to
the events accepted, not to the count of elements sent.

Every event must be one the destinations can carry, or the whole body is a 400 naming
the element: nested at most ``MAX_DEPTH`` levels, numbers finite, no unpaired UTF-16
surrogates in strings. (A deeper event parses but cannot be encoded again, so before
this check it failed delivery on every retry: a poison batch.) Integers beyond 64 bits
become floats, as the JSON parser of the other forms makes them.

Parsing is CPU work proportional to the body: call ``parse_events`` from a worker
thread, not from the event loop.
"""

from __future__ import annotations

import json
import math
import re
import zlib
from collections.abc import Iterator
from typing import Any, Final

import cramjam
import orjson

from tidegate.api.body_guard import INGEST_MAX_BYTES
from tidegate.errors import BadRequest, PayloadTooLarge, UnsupportedMediaType
from tidegate.json_stream import JsonStreamError, make_scanner, read_array, skip_space

__all__ = [
    "MAX_DEPTH",
    "MAX_EVENTS",
    "NDJSON_TYPES",
    "checked_event",
    "decoded_body",
    "events_of",
    "media_type",
    "parse_events",
]

MAX_EVENTS: Final = 50_000
"""Events per request; more is a 413 (split the batch)."""
MAX_DEPTH: Final = 128
"""Nesting levels of one event (the event object itself is level 1)."""

NDJSON_TYPES: Final = frozenset(
    {"application/x-ndjson", "application/ndjson", "application/jsonl", "application/x-jsonlines"}
)
_WHITESPACE: Final = b" \t\r\n"
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_INT_MIN: Final = -(2**63)
_INT_LIMIT: Final = 2**64


def _too_many() -> PayloadTooLarge:
    return PayloadTooLarge(f"More than {MAX_EVENTS} events in one request: split the batch")


def _inflate(body: bytes, encoding: str) -> bytes:
    """Every gzip member (or the deflate stream) of ``body``, at most 10 MiB in all."""
    if encoding == "deflate":
        # RFC 9110 says zlib-wrapped, but many senders send raw deflate: accept both.
        zlib_header = len(body) >= 2 and body[0] & 0x0F == 8 and (body[0] << 8 | body[1]) % 31 == 0
        wbits, name = (15, "deflate") if zlib_header else (-15, "deflate")
    else:
        wbits, name = 47, "gzip"  # gzip, or zlib sent as gzip
    out = bytearray()
    rest = body
    while True:
        inflater = zlib.decompressobj(wbits=wbits)
        try:
            out += inflater.decompress(rest, INGEST_MAX_BYTES + 1 - len(out))
        except zlib.error as error:
            raise BadRequest(f"Body is not valid {name}: {error}") from None
        if len(out) > INGEST_MAX_BYTES or inflater.unconsumed_tail:
            raise PayloadTooLarge(f"Inflated body exceeds {INGEST_MAX_BYTES} bytes")
        if not inflater.eof:
            raise BadRequest(f"Body is not valid {name}: the stream is truncated")
        rest = inflater.unused_data
        # Concatenated gzip members are one stream; zero padding after the last is not.
        if wbits != 47 or not rest.strip(b"\x00"):
            return bytes(out)


def _unsnappy(body: bytes) -> bytes:
    """A snappy block (no framing), at most 10 MiB inflated: the length its header
    declares is checked first, so a small body cannot claim a huge allocation."""
    try:
        size = cramjam.snappy.decompress_raw_len(body)
    except cramjam.DecompressionError as error:
        raise BadRequest(f"Body is not valid snappy: {error}") from None
    if size > INGEST_MAX_BYTES:
        raise PayloadTooLarge(f"Inflated body exceeds {INGEST_MAX_BYTES} bytes")
    try:
        return bytes(cramjam.snappy.decompress_raw(body))
    except cramjam.DecompressionError as error:
        raise BadRequest(f"Body is not valid snappy: {error}") from None


def _unzstd(body: bytes) -> bytes:
    """zstd frames, inflated into a buffer one byte over the limit: a frame claiming or
    holding more stops there, whatever its header says."""
    out = bytearray(INGEST_MAX_BYTES + 1)
    try:
        size = cramjam.zstd.decompress_into(body, out)
    except cramjam.DecompressionError as error:
        if "whole buffer" in str(error):
            raise PayloadTooLarge(f"Inflated body exceeds {INGEST_MAX_BYTES} bytes") from None
        raise BadRequest(f"Body is not valid zstd: {error}") from None
    if size > INGEST_MAX_BYTES:
        raise PayloadTooLarge(f"Inflated body exceeds {INGEST_MAX_BYTES} bytes")
    return bytes(out[:size])


def decoded_body(body: bytes, content_encoding: str | None) -> bytes:
    """``body`` with its ``Content-Encoding`` undone (at most 10 MiB); 415 for an
    encoding other than gzip, deflate, snappy, zstd or identity."""
    encoding = (content_encoding or "").strip().lower()
    if encoding in ("gzip", "x-gzip", "deflate"):
        return _inflate(body, "deflate" if encoding == "deflate" else "gzip")
    if encoding == "snappy":
        return _unsnappy(body)
    if encoding == "zstd":
        return _unzstd(body)
    if encoding not in ("", "identity"):
        raise UnsupportedMediaType(f"Content-Encoding {encoding!r} is not supported")
    return body


def media_type(content_type: str | None) -> str:
    """``application/json; charset=utf-8`` -> ``application/json``."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def parse_events(
    body: bytes, *, content_type: str | None = None, content_encoding: str | None = None
) -> list[dict[str, Any]]:
    return events_of(decoded_body(body, content_encoding), content_type=content_type)


def events_of(body: bytes, *, content_type: str | None = None) -> list[dict[str, Any]]:
    """The events of an already decoded body (the forms above)."""
    text = body.strip(_WHITESPACE)
    if not text:
        raise BadRequest("Empty body: send a JSON object, an array of objects or NDJSON")
    if media_type(content_type) in NDJSON_TYPES:
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
    return [checked_event(value, "The event")]


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# The standard library's C scanner parses one value at a given offset, which orjson
# cannot; it is configured to accept exactly what orjson accepts (no NaN/Infinity).
_SCAN: Final = make_scanner(json.JSONDecoder(parse_constant=_refuse_constant))


def _array(text: bytes) -> list[dict[str, Any]]:
    try:
        source = text.decode("utf-8")
    except UnicodeDecodeError as error:
        raise BadRequest(f"Body is not valid JSON: not UTF-8 ({error.reason})") from None
    check_strings = _SURROGATE_ESCAPE.search(text) is not None

    def event(value: Any, index: int) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise BadRequest(f"Element {index} of the array is {_kind(value)}, not an object")
        return checked_event(value, f"Element {index}", check_strings=check_strings)

    try:
        events, end = read_array(_SCAN, source, 0, limit=MAX_EVENTS, too_many=_too_many, each=event)
    except JsonStreamError as error:
        raise BadRequest(f"Body is not valid JSON: {error}") from None
    if skip_space(source, end) != len(source):
        raise BadRequest("Body is not valid JSON: data after the array")
    return events


def _ndjson(text: bytes) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for number, raw in enumerate(_lines(text), start=1):
        line = raw.strip(_WHITESPACE)
        if not line:
            continue
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError as error:
            raise BadRequest(f"Line {number} is not valid JSON: {error}") from None
        if not isinstance(value, dict):
            raise BadRequest(f"Line {number} is {_kind(value)}, not a JSON object")
        if len(events) >= MAX_EVENTS:
            raise _too_many()
        events.append(checked_event(value, f"Line {number}"))
    return events


def _lines(text: bytes) -> Iterator[bytes]:
    """The lines of ``text`` one at a time (a split would build them all at once)."""
    start = 0
    while True:
        end = text.find(b"\n", start)
        if end < 0:
            yield text[start:]
            return
        yield text[start:end]
        start = end + 1


def checked_event(
    event: dict[str, Any], where: str, *, check_strings: bool = False
) -> dict[str, Any]:
    """``event`` when every destination can carry it (integers beyond 64 bits turned into
    floats, in place), else a 400 naming ``where``."""
    stack: list[tuple[Any, int]] = [(event, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise BadRequest(f"{where} is nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, dict):
            items: Any = value.items()
            if check_strings:
                for key in value:
                    _check_text(key, where)
        else:
            items = enumerate(value)
        for key, item in items:
            if isinstance(item, dict | list):
                if item:
                    stack.append((item, depth + 1))
                elif depth + 1 > MAX_DEPTH:
                    raise BadRequest(f"{where} is nested deeper than {MAX_DEPTH} levels")
            elif isinstance(item, float):
                if not math.isfinite(item):
                    raise BadRequest(f"{where} holds a number out of range")
            elif isinstance(item, int) and not isinstance(item, bool):
                if not _INT_MIN <= item < _INT_LIMIT:
                    try:
                        value[key] = float(item)
                    except OverflowError:
                        raise BadRequest(f"{where} holds a number out of range") from None
            elif check_strings and isinstance(item, str):
                _check_text(item, where)
    return event


def _check_text(text: str, where: str) -> None:
    if text.isascii():
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise BadRequest(f"{where} holds a string with an unpaired UTF-16 surrogate") from None


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

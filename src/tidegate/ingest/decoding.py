"""From request bytes to the list of line elements: content encoding, JSON, the body's
shape and the per-request line cap.

The wire body is already capped at 10 MB by ``api.body_guard``; a gzip body is held to
the same 10 MB once decompressed, checked while inflating, so a small bomb never
allocates more than the cap.

The body is parsed once into plain lists and dicts; no model is built per line (a
pydantic model per line, then a store record, cost 2 GB for one 10 MB body of 873,811
empty lines). Its arrays are read one element at a time and the line count is checked
as they are read, before anything is built per line. Everything here is CPU work for a worker thread, never the event
loop (``service.prepare``).
"""

from __future__ import annotations

import json
import re
import zlib
from typing import Any, Final

import orjson

from tidegate import json_codec
from tidegate.errors import BadRequest, PayloadTooLarge, UnsupportedMediaType
from tidegate.json_stream import (
    JsonStreamError,
    make_scanner,
    object_members,
    read_array,
    skip_space,
)

MAX_DECODED_BYTES: Final = 10 * 1024 * 1024
# Lines per request. The platform's libraries flush by bytes (``@logdna/logger``'s
# default flushLimit is 5 MB): even minimal 60-byte line objects stay under 100,000 per
# batch. Past it a body is an attack or a bug, refused (413) before any line is built.
MAX_LINES_PER_REQUEST: Final = 100_000
_CHUNK: Final = 256 * 1024
# Integers Python's int() refuses (over 4,300 digits) never reach it.
_MAX_INT_DIGITS: Final = 18


def bad_request(detail: str) -> BadRequest:
    return BadRequest(f"Bad or missing parameters. {detail}".strip())


def decode_content(raw: bytes, content_encoding: str | None, *, limit: int) -> bytes:
    """The body with its ``Content-Encoding`` (identity, gzip, deflate) undone."""
    encoding = (content_encoding or "identity").strip().lower()
    if encoding in ("", "identity"):
        return raw
    if encoding in ("gzip", "x-gzip"):
        return _inflate(raw, wbits=16 + zlib.MAX_WBITS, limit=limit)
    if encoding == "deflate":
        # Both zlib-wrapped and raw deflate are seen in the wild; 32 + MAX_WBITS detects.
        return _inflate(raw, wbits=32 + zlib.MAX_WBITS, limit=limit)
    raise UnsupportedMediaType(
        f"Content-Encoding {encoding!r} is not supported (use gzip, deflate or none)"
    )


def _inflate(raw: bytes, *, wbits: int, limit: int) -> bytes:
    out = bytearray()
    data = raw
    try:
        while data:
            inflater = zlib.decompressobj(wbits)
            while data:
                out += inflater.decompress(data, _CHUNK)
                if len(out) > limit:
                    raise PayloadTooLarge(f"Decompressed request body exceeds {limit} bytes")
                data = inflater.unconsumed_tail
            if not inflater.eof:
                raise bad_request("The compressed body is truncated.")
            # Concatenated gzip members are one valid stream (RFC 1952).
            data = inflater.unused_data
    except zlib.error as error:
        raise bad_request(f"The body is not valid {'gzip' if wbits > 31 else 'deflate'}.") from (
            error
        )
    return bytes(out)


def _json_int(text: str) -> int | float | None:
    # Stricter than json_codec (past 64 bits): the element reader makes a double of any
    # integer past 18 digits, so a body reads the same whichever reader takes it.
    if len(text.lstrip("-")) <= _MAX_INT_DIGITS:
        return int(text)
    return json_codec.read_float(text)


# The body's own parser: one line element per C call (``tidegate.json_stream``), reading
# what Python's ``json.dumps`` writes too, normalised as ``json_codec.loads`` does.
_SCAN: Final = make_scanner(
    json.JSONDecoder(
        parse_constant=json_codec.read_constant,
        parse_int=_json_int,
        parse_float=json_codec.read_float,
    )
)
_SURROGATE_ESCAPE: Final = re.compile(rb"\\u[dD][89a-fA-F]")
_LINE_KEYS: Final = ("lines", "ls")


def _too_many_lines() -> PayloadTooLarge:
    return PayloadTooLarge(
        f"At most {MAX_LINES_PER_REQUEST} lines per request; send smaller batches"
    )


# Bodies up to this size are parsed whole by orjson, in one C call that holds the
# interpreter: at most about 3 ms for the costliest shapes (``[[]]`` or ``{}`` elements,
# measured), under the 5 ms a thread may run before the interpreter switches anyway.
# Every array element takes at least two bytes (a digit and a comma), so at no more
# than twice the line cap no array in the body can pass the cap.
_WHOLE_PARSE_BYTES: Final = min(128 * 1024, 2 * MAX_LINES_PER_REQUEST)
# A run of 19 or more digits may be an integer that orjson keeps as an int (up to 20
# digits) where the element reader (``_json_int``) makes a float of it: such a body takes
# that reader. Found by mapping every digit to "0" and anything else to a space, then a
# substring search: a tenth of the time of a regular expression.
_DIGITS_ONLY: Final = bytes(0x30 if 0x30 <= code <= 0x39 else 0x20 for code in range(256))
_LONG_DIGIT_RUN: Final = b"0" * (_MAX_INT_DIGITS + 1)


def _may_hold_long_integer(raw: bytes) -> bool:
    return _LONG_DIGIT_RUN in raw.translate(_DIGITS_ONLY)


def body_lines(raw: bytes) -> list[Any]:
    """The body's line elements (``lines``, or the handler's ``ls``), unchecked one by
    one: a body that is not the protocol at all is a 400, one odd line never is.

    A small body (the usual batch) is parsed whole by orjson. A larger one has its
    arrays read one element at a time, and the line past the cap stops the parse (413):
    a worker thread parsing a 10 MB body never holds the interpreter for long, so the
    event loop keeps answering (``tidegate.json_stream``). Whatever orjson refuses
    (``NaN``, lone surrogates, invalid JSON) goes the second way too, which reads it
    or says precisely what is wrong."""
    if len(raw) <= _WHOLE_PARSE_BYTES and not _may_hold_long_integer(raw):
        try:
            document = orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
        else:
            if isinstance(document, dict):
                return _chosen_lines(document.get("lines"), document.get("ls"))
    try:
        source = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise bad_request(f"The body is not valid JSON: not UTF-8 ({error.reason}).") from None
    position = skip_space(source, 0)
    if position == len(source):
        raise bad_request("The body is empty.")
    if not source.startswith("{", position):
        try:
            json_codec.loads(raw)
        except ValueError as error:
            raise bad_request(f"The body is not valid JSON: {error}.") from None
        raise bad_request("The body must be a JSON object with lines.")

    def read_value(name: str, offset: int) -> tuple[Any, int]:
        if source.startswith("[", offset):
            return read_array(
                _SCAN,
                source,
                offset,
                limit=MAX_LINES_PER_REQUEST,
                too_many=_too_many_lines,
                name=f"{name} element",
            )
        return NotImplemented, offset

    found: dict[str, Any] = {}
    try:
        for name, value in object_members(_SCAN, source, position, read_value=read_value):
            if name in _LINE_KEYS:
                found[name] = value  # a repeated name: the last one counts
    except JsonStreamError as error:
        raise bad_request(f"The body is not valid JSON: {error}.") from None
    chosen = _chosen_lines(found.get("lines"), found.get("ls"))
    if _SURROGATE_ESCAPE.search(raw) is not None:
        chosen = [json_codec.repaired(item) for item in chosen]
    return chosen


def _chosen_lines(lines: Any, ls: Any) -> list[Any]:
    if lines is not None and ls is not None:
        raise bad_request("Send either lines or ls, not both.")
    chosen = lines if lines is not None else ls
    if chosen is None:
        raise bad_request("The body needs lines (or the handler's ls).")
    if not isinstance(chosen, list):
        raise bad_request(f"{'lines' if lines is not None else 'ls'}: an array of lines.")
    return chosen

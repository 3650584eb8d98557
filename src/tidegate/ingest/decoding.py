"""From request bytes to validated line objects: content encoding, JSON, timestamps.

The wire body is already capped at 10 MB by ``api.body_guard``; a gzip body is held to
the same 10 MB once decompressed, checked while inflating, so a small bomb never
allocates more than the cap.
"""

from __future__ import annotations

import math
import zlib
from datetime import datetime

import orjson
from pydantic import TypeAdapter, ValidationError

from tidegate.errors import BadRequest, PayloadTooLarge, UnsupportedMediaType
from tidegate.ingest.schemas import IngestBody, IngestLine

MAX_DECODED_BYTES = 10 * 1024 * 1024
# Year 10000: past it no date library can show the line.
MAX_TIMESTAMP_MS = 253_402_300_800_000
_CHUNK = 256 * 1024

_body_adapter = TypeAdapter(IngestBody)


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


def parse_body(raw: bytes) -> list[IngestLine]:
    if not raw.strip():
        raise bad_request("The body is empty.")
    try:
        body = _body_adapter.validate_json(raw)
    except ValidationError as error:
        raise bad_request(_describe(error)) from error
    if body.lines is not None and body.ls is not None:
        raise bad_request("Send either lines or ls, not both.")
    lines = body.lines if body.lines is not None else body.ls
    if lines is None:
        raise bad_request("The body needs lines (or the handler's ls).")
    return lines


def _describe(error: ValidationError) -> str:
    first = error.errors(include_url=False)[0]
    if first["type"] == "json_invalid":
        return f"The body is not valid JSON: {first.get('ctx', {}).get('error', 'invalid')}."
    where = ".".join(str(part) for part in first["loc"])
    return f"{where}: {first['msg']}." if where else f"{first['msg']}."


def line_meta(line: IngestLine, index: int) -> dict[str, object] | None:
    meta = line.meta
    if meta is None or isinstance(meta, dict):
        return meta
    try:
        parsed = orjson.loads(meta)
    except orjson.JSONDecodeError:
        parsed = None
    if not isinstance(parsed, dict):
        raise bad_request(f"lines.{index}.meta: a string meta must hold a JSON object.")
    return parsed


def timestamp_ms(value: int | float | str | None, *, default: int, index: int) -> int:
    if value is None:
        return default
    if isinstance(value, str):
        text = value.strip()
        if text.isdigit():
            value = int(text)
        else:
            value = _rfc3339_ms(text, index)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise bad_request(f"lines.{index}.timestamp: not a finite number.")
        value = int(value)
    if not 0 <= value < MAX_TIMESTAMP_MS:
        raise bad_request(f"lines.{index}.timestamp: out of range (epoch milliseconds).")
    return value


def _rfc3339_ms(text: str, index: int) -> int:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as error:
        raise bad_request(
            f"lines.{index}.timestamp: not epoch milliseconds nor an RFC 3339 time."
        ) from error
    if moment.tzinfo is None:
        raise bad_request(f"lines.{index}.timestamp: an RFC 3339 time needs a UTC offset.")
    return int(moment.timestamp() * 1000)

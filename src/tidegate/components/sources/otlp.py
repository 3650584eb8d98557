"""What the OTLP/HTTP sources (``open-telemetry-logs``, ``-metrics``, ``-traces``)
share: reading an ``Export*ServiceRequest`` as binary protobuf
(``application/x-protobuf``) or OTLP JSON (``application/json``: lowerCamelCase names,
trace and span ids as hex, 64-bit integers as strings or numbers), the answer (an
empty ``Export*ServiceResponse`` in the request's encoding), and OTLP values, attributes
and scopes as JSON.

Parsing is CPU work proportional to the body: call from a worker thread.
"""

from __future__ import annotations

import base64
import re
from typing import Any, Final, TypeVar

import orjson
from google.protobuf import json_format  # type: ignore[import-untyped]
from google.protobuf.message import DecodeError, Message  # type: ignore[import-untyped]
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from tidegate.errors import BadRequest, UnsupportedMediaType
from tidegate.kit.body import MAX_DEPTH, media_type

__all__ = ["attributes", "hex_id", "nanos_to_ms", "parse_request", "response", "scope", "value"]

M = TypeVar("M", bound=Message)

_PROTOBUF: Final = frozenset({"application/x-protobuf", "application/protobuf"})
_HEX: Final = re.compile(r"^[0-9a-fA-F]*$")
_ID_FIELDS: Final = frozenset({"traceId", "spanId", "parentSpanId"})


def value(item: AnyValue, depth: int = 0) -> Any:
    """An ``AnyValue`` as JSON (bytes as base64)."""
    if depth > MAX_DEPTH:
        raise BadRequest("An OTLP value is nested too deeply")
    kind = item.WhichOneof("value")
    if kind is None:
        return None
    if kind == "string_value":
        return item.string_value
    if kind == "bool_value":
        return item.bool_value
    if kind == "int_value":
        return item.int_value
    if kind == "double_value":
        return item.double_value
    if kind == "bytes_value":
        return base64.b64encode(item.bytes_value).decode("ascii")
    if kind == "array_value":
        return [value(element, depth + 1) for element in item.array_value.values]
    return attributes(item.kvlist_value.values, depth + 1)


def attributes(items: Any, depth: int = 0) -> dict[str, Any]:
    """Repeated ``KeyValue`` as an object."""
    out: dict[str, Any] = {}
    for item in items:
        assert isinstance(item, KeyValue)
        out[item.key] = value(item.value, depth)
    return out


def scope(info: Any) -> dict[str, Any]:
    """An ``InstrumentationScope`` as ``{name, version, attributes}`` (what is set)."""
    out: dict[str, Any] = {}
    if info.name:
        out["name"] = info.name
    if info.version:
        out["version"] = info.version
    if info.attributes:
        out["attributes"] = attributes(info.attributes)
    return out


def nanos_to_ms(nanos: int) -> int:
    return nanos // 1_000_000


def hex_id(raw: bytes) -> str:
    return raw.hex()


def _hex_ids_to_base64(document: Any) -> None:
    """OTLP JSON carries trace and span ids as hex where protobuf's JSON mapping reads
    bytes as base64: rewritten in place before parsing, wherever they are (spans,
    links, log records, exemplars), without recursion. Anything odd is left for the
    parser to refuse."""
    stack: list[Any] = [document]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
            continue
        if not isinstance(item, dict):
            continue
        for name, found in item.items():
            if name in _ID_FIELDS and isinstance(found, str) and found and _HEX.match(found):
                if len(found) % 2:
                    raise BadRequest(f"{name} must be hex of whole bytes")
                item[name] = base64.b64encode(bytes.fromhex(found)).decode()
            elif isinstance(found, dict | list) and name not in ("attributes", "body"):
                stack.append(found)


def parse_request(message: M, body: bytes, content_type: str | None) -> tuple[M, bool]:
    """``message`` filled from the (inflated) body, and whether the body was JSON."""
    what = type(message).__name__
    media = media_type(content_type)
    if media in _PROTOBUF:
        try:
            message.ParseFromString(body)
        except (DecodeError, RecursionError) as error:
            raise BadRequest(f"Body is not an OTLP {what}: {error}") from None
        return message, False
    if media != "application/json":
        raise UnsupportedMediaType("OTLP/HTTP takes application/x-protobuf or application/json")
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise BadRequest(f"Body is not valid JSON: {error}") from None
    if not isinstance(document, dict):
        raise BadRequest(f"Body must be an OTLP {what} object")
    _hex_ids_to_base64(document)
    try:
        json_format.ParseDict(document, message, ignore_unknown_fields=True)
    except (json_format.ParseError, RecursionError, ValueError) as error:
        raise BadRequest(f"Body is not an OTLP {what}: {error}") from None
    return message, True


def response(empty: Message, is_json: bool) -> tuple[bytes, str]:
    """The success answer's body and content type: ``empty`` (an
    ``Export*ServiceResponse``) in the request's encoding."""
    if is_json:
        return b"{}", "application/json"
    return bytes(empty.SerializeToString()), "application/x-protobuf"

"""The ``fluent`` source: Fluent Bit and Fluentd, in either of two ways.

* **HTTP** (Fluent Bit's ``http`` output, Fluentd's ``out_http``) posting to the
  source's gateway route (``POST /gateway/{id}``). ``decoding`` (the provider's values;
  default ``json``): ``json`` takes Fluent Bit's ``Format json`` (an array of records,
  each with its ``date`` key) or one object; ``ndjson`` its ``Format json_lines``;
  ``bytes`` the whole body as one event ``{"message": ...}`` (``decoding.py``).
* **Fluent Forward** (msgpack over TCP: Fluent Bit's ``forward`` output, Fluentd's
  ``out_forward``, the ``fluent-logger`` libraries) to the operator's Forward listener
  (``gateway/forward.py``), which hands each Forward message here as a body of
  ``FORWARD_MEDIA_TYPE``. The modes: Message ``[tag, time, record, option?]``, Forward
  ``[tag, [[time, record], ...], option?]``, PackedForward ``[tag, <msgpack stream of
  [time, record]>, option?]`` and CompressedPackedForward (the same, gzip, with
  ``option.compressed: "gzip"``). Each record is one event, with ``tag`` (the message's
  tag less the access key, when not already set) and ``timestamp`` (epoch ms of the
  entry's time, integer or EventTime, when not already set).
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict

from tidegate.components.base import BuildContext, Component, Needs, NodeRef
from tidegate.components.sources.decoding import decode_events
from tidegate.components.sources.push import ROUTE_ITSELF, Push, Received
from tidegate.errors import BadRequest, PayloadTooLarge
from tidegate.kit.body import MAX_EVENTS, checked_event

__all__ = ["COMPONENT", "FORWARD_MEDIA_TYPE", "FluentConfig", "forward_events", "receive"]

FORWARD_MEDIA_TYPE: Final = "application/x-fluent-forward"
TAG_HEADER: Final = "x-fluent-tag"
MAX_INFLATED_BYTES: Final = 10 * 1024 * 1024


class FluentConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    decoding: Literal["bytes", "json", "ndjson"] = "json"


def _millis(value: Any) -> int | None:
    import msgpack

    if isinstance(value, msgpack.ExtType) and value.code == 0 and len(value.data) == 8:
        seconds = int.from_bytes(value.data[:4], "big")
        nanos = int.from_bytes(value.data[4:], "big")
        return seconds * 1000 + nanos // 1_000_000
    if isinstance(value, msgpack.Timestamp):
        return int(value.to_unix_nano() // 1_000_000)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value * 1000
    if isinstance(value, float) and value >= 0:
        return int(value * 1000)
    return None


def _event(entry: Any, tag: str, number: int) -> dict[str, Any]:
    if not isinstance(entry, list | tuple) or len(entry) < 2 or not isinstance(entry[1], dict):
        raise BadRequest(f"Forward entry {number} is not [time, record]")
    record = {str(k): v for k, v in entry[1].items()}
    event = _plain(record, number)
    if tag and "tag" not in event:
        event["tag"] = tag
    millis = _millis(entry[0])
    if millis is not None and "timestamp" not in event:
        event["timestamp"] = millis
    return checked_event(event, f"Forward entry {number}", check_strings=True)


def _plain(value: Any, number: int) -> Any:
    """JSON values only: msgpack bytes become text, other extension types a 400."""
    import msgpack

    if isinstance(value, dict):
        return {str(k): _plain(v, number) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v, number) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, msgpack.ExtType | msgpack.Timestamp):
        raise BadRequest(f"Forward entry {number} holds a msgpack extension value")
    return value


def _unpacker(limit: int) -> Any:
    import msgpack

    return msgpack.Unpacker(
        raw=False,
        unicode_errors="replace",
        strict_map_key=False,
        max_buffer_size=limit,
        timestamp=0,
    )


def forward_events(body: bytes, tag: str) -> list[dict[str, Any]]:
    """The events of one Forward message (its msgpack bytes, as sent). CPU work."""
    import msgpack

    try:
        message = msgpack.unpackb(
            body, raw=False, unicode_errors="replace", strict_map_key=False, timestamp=0
        )
    except (ValueError, msgpack.UnpackException) as error:
        raise BadRequest(f"Not a Forward message: {error}") from None
    if not isinstance(message, list | tuple) or len(message) < 2:
        raise BadRequest("A Forward message is an array [tag, ...]")
    second = message[1]
    if isinstance(second, list | tuple):  # Forward mode
        entries: list[Any] = list(second)
    elif isinstance(second, bytes | str):  # PackedForward, maybe compressed
        packed = second.encode("latin-1") if isinstance(second, str) else second
        option = message[2] if len(message) > 2 and isinstance(message[2], dict) else {}
        if option.get("compressed") == "gzip":
            packed = _gunzip(packed)
        unpacker = _unpacker(max(len(packed), 1))
        unpacker.feed(packed)
        entries = []
        try:
            for entry in unpacker:
                entries.append(entry)
                if len(entries) > MAX_EVENTS:
                    break
        except (ValueError, msgpack.UnpackException) as error:
            raise BadRequest(f"PackedForward entries are not msgpack: {error}") from None
    else:  # Message mode: [tag, time, record, option?]
        entries = [list(message[1:3])] if len(message) >= 3 else []
    if len(entries) > MAX_EVENTS:
        raise PayloadTooLarge(f"More than {MAX_EVENTS} entries in one Forward message")
    if not entries:
        raise BadRequest("A Forward message without entries")
    return [_event(entry, tag, number) for number, entry in enumerate(entries, start=1)]


def _gunzip(data: bytes) -> bytes:
    import cramjam

    out = bytearray(MAX_INFLATED_BYTES)
    try:
        size = cramjam.gzip.decompress_into(data, out)
    except cramjam.DecompressionError:
        raise PayloadTooLarge(
            f"CompressedPackedForward: not gzip, or over {MAX_INFLATED_BYTES} bytes inflated"
        ) from None
    return bytes(out[:size])


def receive(config: FluentConfig, push: Push) -> Received:
    if push.content_type == FORWARD_MEDIA_TYPE:
        return Received(forward_events(push.body, push.headers.get(TAG_HEADER, "")))
    return Received(decode_events(push.body, decoding=config.decoding, content_type=None))


def _build(_config: FluentConfig, _context: BuildContext, _node: NodeRef) -> None:
    return None


COMPONENT: Component[FluentConfig] = Component(
    kind="source",
    type="fluent",
    config_model=FluentConfig,
    build=_build,
    describe="Fluent Bit / Fluentd: their http output to the gateway route (`decoding`: "
    "json, ndjson, bytes), or Fluent Forward to the operator's Forward listener",
    needs=Needs(gateway_route=True),
    receive=receive,
    paths=frozenset({ROUTE_ITSELF}),
)

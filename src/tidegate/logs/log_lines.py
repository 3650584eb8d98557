"""How an event becomes a line of the account's log store (the ``log_analysis``
destination).

* ``line``: the event's ``line``, else ``message``, else ``msg`` when a string;
  otherwise the whole event as compact JSON.
* ``host``: ``host`` or ``hostname``; the destination's ``host`` (default
  ``"gateway"``) when neither is a usable value.
* ``app`` (``app``, ``application``), ``level`` (``level``, ``severity``), ``env``,
  ``file``, ``ip``, ``mac``: the field of that name when it is a string or a number.
* ``tags``: a list of strings, or one comma-separated string.
* ``ts``: ``timestamp``, else ``ts``, else ``time``, read by the rule every writer of
  lines shares (``logs.timestamps``: epoch milliseconds in [0, year 10000), or an ISO
  8601 time, UTC when it has no offset); the time the gateway received the event
  otherwise. An event that has one of those fields but no usable time in any of them
  is counted as a fallback (``lines_fallback`` in usage), as ingestion counts it.
* ``meta``: the event's ``meta`` object when it has one; otherwise every field not
  used above (or none when nothing is left).

Text is capped at the store's column sizes and NUL characters (which PostgreSQL
cannot store) become U+FFFD.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, Final

import orjson

from tidegate import json_codec
from tidegate.logs.store import NewLine
from tidegate.logs.timestamps import time_from

__all__ = ["DEFAULT_HOST", "EVENT_TIME_FIELDS", "event_to_line", "events_to_lines"]

DEFAULT_HOST: Final = "gateway"
_LINE_FIELDS: Final = ("line", "message", "msg")
EVENT_TIME_FIELDS: Final = ("timestamp", "ts", "time")
# (line attribute, event fields, column size)
_TEXT_FIELDS: Final = (
    ("app", ("app", "application"), 512),
    ("level", ("level", "severity"), 64),
    ("env", ("env",), 256),
    ("file", ("file",), 512),
    ("ip", ("ip",), 64),
    ("mac", ("mac",), 64),
)
_HOST_FIELDS: Final = ("host", "hostname")
_HOST_SIZE: Final = 256
_MAX_TAGS: Final = 100


def _text(value: Any, size: int) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        value = str(value)
    if not isinstance(value, str) or not value:
        return None
    return value[:size].replace("\x00", "\ufffd")


def _tags(value: Any) -> list[str] | None:
    if isinstance(value, str):
        items: Iterable[Any] = value.split(",")
    elif isinstance(value, list):
        items = value
    else:
        return None
    tags = [text for text in (_text(item, 256) for item in items) if text and text.strip()]
    return [tag.strip() for tag in tags[:_MAX_TAGS]] or None


def _clean_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """Meta as both databases hold it alike (NUL-free, NaN and infinities as null,
    integers past 64 bits as floats); a copy only when needed."""
    try:
        dumped = orjson.dumps(meta)
    except TypeError:
        dumped = orjson.dumps(json_codec.plain(meta))
    else:
        if b"\\u0000" not in dumped and not _has_non_finite(meta):
            return meta
    cleaned = orjson.loads(dumped.replace(b"\\u0000", b"\\ufffd"))
    assert isinstance(cleaned, dict)
    return cleaned


def _has_non_finite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_has_non_finite(item) for item in value.values())
    if isinstance(value, list):
        return any(_has_non_finite(item) for item in value)
    return False


def event_to_line(
    event: dict[str, Any], *, received_ms: int, default_host: str = DEFAULT_HOST
) -> NewLine:
    used: set[str] = set()
    line: str | None = None
    for name in _LINE_FIELDS:
        value = event.get(name)
        if isinstance(value, str):
            line = value.replace("\x00", "\ufffd")
            used.add(name)
            break
    if line is None:
        whole = json_codec.dumps(event)
        line = whole.decode().replace("\\u0000", "\\ufffd")

    host = default_host
    for name in _HOST_FIELDS:
        text = _text(event.get(name), _HOST_SIZE)
        if text is not None:
            host = text
            used.add(name)
            break

    texts: dict[str, str | None] = {}
    for attribute, names, size in _TEXT_FIELDS:
        texts[attribute] = None
        for name in names:
            text = _text(event.get(name), size)
            if text is not None:
                texts[attribute] = text
                used.add(name)
                break

    tags = _tags(event.get("tags"))
    if tags is not None:
        used.add("tags")

    ts, time_field, fell_back = time_from(event, EVENT_TIME_FIELDS, default=received_ms)
    if time_field is not None:
        used.add(time_field)

    meta_value = event.get("meta")
    if isinstance(meta_value, dict):
        meta: dict[str, Any] | None = meta_value
    else:
        rest = {key: value for key, value in event.items() if key not in used}
        meta = rest or None
    return NewLine(
        line=line,
        ts=ts,
        host=host,
        app=texts["app"],
        level=texts["level"],
        env=texts["env"],
        file=texts["file"],
        ip=texts["ip"],
        mac=texts["mac"],
        tags=tags,
        meta=None if meta is None else _clean_meta(meta),
        repaired=fell_back,
    )


def events_to_lines(events: Iterable[dict[str, Any]], *, received_ms: int) -> list[NewLine]:
    return [event_to_line(event, received_ms=received_ms) for event in events]

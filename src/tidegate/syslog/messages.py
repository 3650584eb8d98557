"""One syslog frame read as a line of the ingestion protocol, and the ingestion key it
carries (docs/syslog.md).

The key travels in the platform's structured-data element, ``[logdna@48950
key="<ingestion key>"]`` (its rsyslog template puts it between the RFC 5424 header and
the message); an RFC 3164 line carries the same element at the start of its message.
The element is taken out: the key is never stored, shown or logged. ``tags="a,b"``
in the element gives the line's tags, as ``?tags=`` does on ``/logs/ingest``.

The frame becomes the line object ``/logs/ingest`` takes (``line``, ``hostname``,
``app``, ``level``, ``timestamp``, ``meta``), so the one writer builds and judges it
exactly as an ingested line: the message is the line's text, the header's host, app
name and severity its host, app and level, RFC 5424's time its time (RFC 3164 has no
year or zone: the receive time, the header's time kept in ``meta.timestamp``), and
the rest of the header (``priority``, ``facility``, ``severity``, ``procid``,
``msgid``, other structured data) its meta, under the names line parsing gives them.

Plain CPU and linear (the line parser's fixed patterns): run in a worker thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tidegate.logs.parsing import parse_syslog, structured_data

__all__ = ["KEY_ELEMENT", "MAX_KEY_CHARS", "Message", "read_frame"]

KEY_ELEMENT = "logdna@48950"
# Longer text is no key of ours: refused without hashing it.
MAX_KEY_CHARS = 128
# Header fields that are the line's own columns, not meta.
_COLUMNS = frozenset({"hostname", "appname", "timestamp", "message"})


@dataclass(slots=True)
class Message:
    """A frame read: the key it carries (None: none), its tags (the element's ``tags``
    text, None: none), the line object to store, and whether the frame needed a repair
    (cut at the line limit, or bytes that are not UTF-8), counted as ingestion counts
    one (``lines_fallback`` in usage)."""

    key: str | None
    tags: str | None
    item: dict[str, Any]
    repaired: bool = False


def _unescaped(value: str) -> str:
    # RFC 5424 escapes '"', '\' and ']' in a parameter value with a backslash.
    return value.replace('\\"', '"').replace("\\]", "]").replace("\\\\", "\\")


def _key_element(element: dict[str, str] | None) -> tuple[str | None, str | None]:
    if element is None:
        return None, None
    key = element.get("key")
    tags = element.get("tags")
    if key is not None:
        key = _unescaped(key).strip()
        if not key or len(key) > MAX_KEY_CHARS:
            key = None
    return key, None if tags is None else _unescaped(tags)


def read_frame(data: bytes, *, truncated: bool = False) -> Message | None:
    """``data`` as a line to store, or None when it is not syslog (RFC 5424 or 3164):
    such a frame carries no key either."""
    repaired = truncated
    try:
        text = data.decode()
    except UnicodeDecodeError:
        text, repaired = data.decode("utf-8", "replace"), True
    text = text.rstrip("\r\n")
    parsed = parse_syslog(text)
    if parsed is None or parsed.fields is None:
        return None
    fields = parsed.fields
    message: str = fields.get("message", "")
    element: dict[str, str] | None
    if "version" in fields:  # RFC 5424
        sd: dict[str, dict[str, str]] = fields.pop("structured_data", {})
        element = sd.pop(KEY_ELEMENT, None)
        if sd:
            fields["structured_data"] = sd
    else:  # RFC 3164: the element opens the message
        found, end = structured_data(message)
        element = found.get(KEY_ELEMENT)
        if element is not None:
            message = message[end:]
    key, tags = _key_element(element)
    item: dict[str, Any] = {
        "line": message.lstrip(" "),
        "hostname": fields.get("hostname"),
        "app": fields.get("appname"),
        "level": parsed.level,
    }
    if "version" in fields:
        item["timestamp"] = fields.get("timestamp")
    meta = {name: value for name, value in fields.items() if name not in _COLUMNS}
    if "version" not in fields and "timestamp" in fields:
        meta["timestamp"] = fields["timestamp"]
    item["meta"] = meta
    return Message(key=key, tags=tags, item=item, repaired=repaired)

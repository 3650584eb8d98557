"""The ``decoding`` option of the ``http`` and ``webhook`` sources: how a request body
(already inflated) becomes events.

* ``json``: a JSON object (one event) or an array of objects (one event each).
* ``ndjson``: one JSON object per line (blank lines skipped).
* ``bytes``: the whole body is one event ``{"message": "<body as UTF-8 text>"}``
  (invalid UTF-8 replaced by U+FFFD).
* ``auto`` (the default, and tidegate's behaviour before the option existed): by
  ``Content-Type``: NDJSON types as ``ndjson``; ``text/*`` and
  ``application/octet-stream`` as ``bytes``; anything else a JSON object, an array of
  objects, or NDJSON recognised from the text.

Every JSON form has the limits of ``kit.body`` (events per request, nesting,
numbers, surrogates), and every problem is a 400 naming it.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from tidegate.errors import BadRequest
from tidegate.kit.body import NDJSON_TYPES, events_of, media_type

__all__ = ["Decoding", "decode_events"]

Decoding = Literal["auto", "bytes", "json", "ndjson"]

_TEXT_TYPES: Final = frozenset({"application/octet-stream"})


def _bytes_event(body: bytes) -> list[dict[str, Any]]:
    if not body:
        raise BadRequest("Empty body")
    return [{"message": body.decode("utf-8", "replace").replace("\x00", "\ufffd")}]


def decode_events(
    body: bytes, *, decoding: Decoding, content_type: str | None
) -> list[dict[str, Any]]:
    """Events of a decompressed body (CPU work: call from a worker thread)."""
    media = media_type(content_type)
    if decoding == "auto":
        if media in NDJSON_TYPES:
            decoding = "ndjson"
        elif media.startswith("text/") or media in _TEXT_TYPES:
            decoding = "bytes"
    if decoding == "bytes":
        return _bytes_event(body)
    if decoding == "ndjson":
        return events_of(body, content_type="application/x-ndjson")
    if decoding == "json":
        stripped = body.lstrip()
        if stripped[:1] not in (b"{", b"["):
            raise BadRequest("Body must be a JSON object or an array of objects (decoding json)")
        return events_of(body, content_type="application/json")
    return events_of(body, content_type=content_type)

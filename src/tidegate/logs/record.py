"""The public shape of one log line, as export and live tail return it.

Named after the platform's export records: reserved fields start with ``_``, ``level``
does not. A field the line does not have is left out rather than sent as ``null``;
``_line``, ``_ts`` and ``_host`` are always present. ``_meta`` carries the line's meta
object: what the sender sent, over the fields parsed from the line's text
(docs/line-parsing.md), with the meta sent unindexed (``indexMeta: false``) shown there
too: the platform shows it, it only does not search it. Kept apart rather than merged
into the record, so a meta key can never shadow a reserved field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# Line ids (a record's ``_id``) are 64-bit signed integers on both backends.
MAX_LINE_ID = 2**63 - 1


def parse_line_id(text: str | None) -> int | None:
    """A line's id as a client gives it back (``_id``, SSE's ``Last-Event-ID``), or None
    when ``text`` is not one."""
    value = (text or "").strip()
    if not value.isascii() or not value.isdigit() or len(value) > 19:
        return None
    number = int(value)
    return number if 1 <= number <= MAX_LINE_ID else None


# The optional short fields in the record's order, each with the line's column it holds.
OPTIONAL_FIELDS = (
    ("_app", "app"),
    ("level", "level"),
    ("_env", "env"),
    ("_file", "file"),
    ("_ip", "ip"),
    ("_mac", "mac"),
)


def public_record(
    *,
    line: str,
    ts: int,
    host: str,
    app: str | None = None,
    level: str | None = None,
    env: str | None = None,
    file: str | None = None,
    ip: str | None = None,
    mac: str | None = None,
    tags: Sequence[str] | None = None,
    meta: Mapping[str, Any] | None = None,
    line_id: int | None = None,
    meta_unindexed: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    record: dict[str, Any] = {}
    if line_id is not None:
        record["_id"] = str(line_id)
    record["_ts"] = ts
    record["_host"] = host
    optional: tuple[tuple[str, object], ...] = (
        ("_app", app),
        ("level", level),
        ("_env", env),
        ("_file", file),
        ("_ip", ip),
        ("_mac", mac),
    )
    for name, value in optional:
        if value is not None:
            record[name] = value
    if tags:
        record["_tag"] = list(tags)
    if meta_unindexed is not None:
        # A key of the searchable meta (the agent's labels beside a string meta) wins.
        record["_meta"] = {**meta_unindexed, **(meta or {})}
    elif meta is not None:
        record["_meta"] = dict(meta)
    record["_line"] = line
    return record

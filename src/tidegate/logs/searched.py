"""The text bare terms and quoted phrases search in a stored line: its message, when
its text was parsed into one, as the platform searches it (docs/line-parsing.md, "The
message is the searched text").

Decided from the stored row alone (the text and the meta), so that every reader
(export, aggregate, live tail, exclusion rules, views, alerts) agrees without a column
of its own: the meta's ``message`` counts when the line's text holds it as its parsed
message, so a sender's own meta ``message`` beside a text that says something else
changes nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

import orjson

from tidegate.logs.parsing import parsed_message
from tidegate.search import LogLine

__all__ = ["StoredLine", "searched_text"]


def searched_text(line: str, meta: Mapping[str, object] | None) -> str:
    """The message of ``line`` when its meta's ``message`` string is the one its text
    was parsed into (a JSON object's ``message``, or the message part of a syslog,
    logfmt, nginx error, klog, server or CloudWatch line), else the whole text."""
    if not meta:
        return line
    message = meta.get("message")
    if not isinstance(message, str):
        return line
    if line.rstrip().endswith("}") and _json_message(line, message):
        return message
    # Cheap tests first: a parsed message is in the text as written, or as logfmt
    # escapes its quotes and backslashes (as JSON does: the index is searched for a
    # literal both ways, and a segment's text filter reads the text alone, so a
    # message in neither spelling, such as logfmt's ``\t`` read as ``t``, is not
    # searched: the whole text is).
    if message not in line and _escaped(message) not in line:
        return line
    return message if parsed_message(line) == message else line


def _escaped(message: str) -> str:
    if '"' not in message and "\\" not in message:
        return message
    return message.replace("\\", "\\\\").replace('"', '\\"')


def _json_message(line: str, message: str) -> bool:
    """Whether the text holds ``message`` as a JSON object's ``"message":`` value,
    spelled as orjson, Python's ``json`` or .NET's System.Text.Json (and Jackson's
    escaping) write it (string tests: no parsing)."""
    encoded = orjson.dumps(message).decode()
    if not message.isascii() and encoded not in line:
        encoded = json.dumps(message)  # as Python's json writes it: \u00e9
        if encoded not in line:
            encoded = _UNICODE_ESCAPE.sub(_upper_hex, encoded)  # and .NET's: \u00E9
    return f'"message":{encoded}' in line or f'"message": {encoded}' in line


_UNICODE_ESCAPE = re.compile(r"\\u[0-9a-f]{4}")


def _upper_hex(escape: re.Match[str]) -> str:
    return "\\u" + escape.group()[2:].upper()


class StoredLine(LogLine):
    """A stored (or ingested, parsed) line as queries see it: bare terms and phrases
    search its message (``searched_text``), asked only when a query has one."""

    def searched(self) -> str:
        return searched_text(self.line, self.meta)

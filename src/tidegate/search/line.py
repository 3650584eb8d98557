"""The log line a compiled query is evaluated against."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import overload

import orjson


class _FoldedLine:
    """``line.folded``: computed on first use, then a plain instance attribute.

    A non-data descriptor does what ``functools.cached_property`` does without its
    per-access lock, which on Python 3.11 cost more than the case-folding itself.
    """

    @overload
    def __get__(self, instance: None, owner: type[LogLine]) -> _FoldedLine: ...
    @overload
    def __get__(self, instance: LogLine, owner: type[LogLine]) -> str: ...
    def __get__(self, instance: LogLine | None, owner: type[LogLine]) -> str | _FoldedLine:
        if instance is None:
            return self
        folded = instance.__dict__["folded"] = searched_text(
            instance.line, instance.meta
        ).casefold()
        return folded


def searched_text(line: str, meta: Mapping[str, object] | None) -> str:
    """The text bare terms and quoted phrases search: the line's text, or, for a JSON
    line (a text that ends in a JSON object) whose object has a ``message`` string, that
    message, as the platform searches it (docs/line-parsing.md, "The message is the
    searched text"). ``meta`` holds the parsed object's fields; the message counts only
    when the text holds it as the JSON object's ``message`` (so a sender's own meta
    ``message`` on another line changes nothing)."""
    if not meta:
        return line
    message = meta.get("message")
    if not isinstance(message, str) or not line.rstrip().endswith("}"):
        return line
    encoded = orjson.dumps(message).decode()
    if not message.isascii() and encoded not in line:
        encoded = json.dumps(message)  # as Python's json writes it: \u00e9
    if f'"message":{encoded}' in line or f'"message": {encoded}' in line:
        return message
    return line


# Not frozen: a frozen dataclass's __init__ goes through object.__setattr__ per field,
# which made building a LogLine cost more than evaluating ten rules against it. Treat
# instances as immutable all the same: ``folded`` is cached from ``line``.
@dataclass
class LogLine:
    """One log line as the search syntax sees it.

    ``line`` is the line's text; bare terms and quoted phrases search it, or the
    ``message`` of a JSON line (``searched_text``). The named
    fields back the built-in ``host:``, ``app:``, ``level:``, ``source:``, ``file:`` and
    ``namespace:``; ``None`` means the line has no such field. ``account`` is the id of
    the account the line belongs to (``_account:``), when the caller knows it. Every
    other field name in a query is looked up in ``meta`` (see ``docs/search-syntax.md``).

    Build one per line and evaluate every rule against that one instance: ``folded``
    (the case-folded text) is computed on first use and then shared by all rules.
    """

    line: str
    host: str | None = None
    app: str | None = None
    level: str | None = None
    source: str | None = None
    file: str | None = None
    namespace: str | None = None
    meta: Mapping[str, object] | None = None
    account: str | None = None

    folded = _FoldedLine()

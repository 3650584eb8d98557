"""The log line a compiled query is evaluated against."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import overload


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
        folded = instance.__dict__["folded"] = instance.searched().casefold()
        return folded


# Not frozen: a frozen dataclass's __init__ goes through object.__setattr__ per field,
# which made building a LogLine cost more than evaluating ten rules against it. Treat
# instances as immutable all the same: ``folded`` is cached from ``line``.
@dataclass
class LogLine:
    """One log line as the search syntax sees it.

    ``line`` is the line's text; bare terms and quoted phrases search it (``searched``:
    a stored line's message, ``logs.searched.StoredLine``). The named
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

    def searched(self) -> str:
        """The text bare terms and quoted phrases search: the line's text here. A
        subclass may answer another (a parsed line's message); it is asked once."""
        return self.line

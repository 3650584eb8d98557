"""Tenant regular expressions on a linear-time engine (RE2).

Python's `re` backtracks: `(a+)+$` against 26 `a`s runs for seconds, on the event loop,
for every tenant of the worker. RE2 matches in time linear in the subject and refuses
what it cannot do in linear time (backreferences, lookaround, possessive repetition).
Its memory per pattern is capped by `MAX_MEMORY` (program plus DFA cache); a pattern
whose program would not fit is refused when it is saved.

This is the one place that imports `re2` (it ships no type information); the rest of
the code sees `LinearRegex` and `RegexError`.
"""

from __future__ import annotations

from typing import Any, Final

import re2  # type: ignore[import-untyped]

__all__ = ["MAX_MEMORY", "CapturingRegex", "LinearRegex", "RegexError"]

# Per compiled pattern. Ordinary patterns need a few KiB; 1 MiB still fits a program of
# thousands of instructions (`[a-z]{1000}x`) while bounding what one condition holds.
MAX_MEMORY: Final = 1 << 20

_UNANCHORED: Final[Any] = re2._re2.RE2.Anchor.UNANCHORED
_NO_MATCH: Final = (-1, -1)


class RegexError(ValueError):
    """A pattern RE2 refuses; the message says why (`invalid perl operator: (?=`)."""


def _options(*, case_sensitive: bool) -> Any:
    options = re2.Options()
    options.case_sensitive = case_sensitive
    options.max_mem = MAX_MEMORY
    options.never_capture = True  # only "does it match" is ever asked
    options.log_errors = False  # a tenant's bad pattern is not the server's error
    return options


class LinearRegex:
    """A compiled pattern answering `search(text)`: does it match anywhere in `text`."""

    __slots__ = ("_match", "pattern")

    def __init__(self, pattern: str, *, case_sensitive: bool = True) -> None:
        self.pattern = pattern
        try:
            encoded = pattern.encode("utf-8")
        except UnicodeEncodeError:
            raise RegexError("the pattern is not valid Unicode text") from None
        compiled = re2._re2.RE2(encoded, _options(case_sensitive=case_sensitive))
        if not compiled.ok():
            reason = compiled.error()
            if isinstance(reason, bytes):
                reason = reason.decode("utf-8", "replace")
            raise RegexError(str(reason))
        # The low-level call skips the wrapper's span decoding: one C call per test.
        self._match = compiled.Match

    def search(self, text: str) -> bool:
        # surrogatepass: a JSON string may hold a lone surrogate; RE2 treats the bytes
        # as invalid UTF-8 (matching nothing special) instead of the encode raising.
        data = text.encode("utf-8", "surrogatepass")
        return bool(self._match(_UNANCHORED, data, 0, len(data))[0] != _NO_MATCH)

    def __repr__(self) -> str:
        return f"LinearRegex({self.pattern!r})"


class CapturingRegex:
    """A compiled pattern answering ``named_groups(text)``: the named groups of its
    first match (``None`` for a group that did not take part), or None when it does
    not match. Linear time, memory capped as for ``LinearRegex``."""

    __slots__ = ("_groups", "_match", "pattern")

    def __init__(self, pattern: str, *, case_sensitive: bool = True) -> None:
        self.pattern = pattern
        try:
            encoded = pattern.encode("utf-8")
        except UnicodeEncodeError:
            raise RegexError("the pattern is not valid Unicode text") from None
        options = _options(case_sensitive=case_sensitive)
        options.never_capture = False
        compiled = re2._re2.RE2(encoded, options)
        if not compiled.ok():
            reason = compiled.error()
            if isinstance(reason, bytes):
                reason = reason.decode("utf-8", "replace")
            raise RegexError(str(reason))
        self._groups: list[tuple[str, int]] = [
            (name.decode("utf-8"), index) for name, index in compiled.NamedCapturingGroups()
        ]
        # The low-level call: one C call answering byte spans, no per-call wrapper work.
        self._match = compiled.Match

    @property
    def group_names(self) -> list[str]:
        return [name for name, _ in self._groups]

    def named_groups(self, text: str) -> dict[str, str | None] | None:
        data = text.encode("utf-8", "surrogatepass")
        spans = self._match(_UNANCHORED, data, 0, len(data))
        if spans[0] == _NO_MATCH:
            return None
        groups: dict[str, str | None] = {}
        for name, index in self._groups:
            start, end = spans[index]
            groups[name] = None if start < 0 else data[start:end].decode("utf-8", "surrogatepass")
        return groups

    def __repr__(self) -> str:
        return f"CapturingRegex({self.pattern!r})"

"""Parsing template patterns: RE2 with named groups and Grok-like ``%{NAME:field}`` tokens.

A tenant writes a pattern such as ``%{IP:client} %{WORD:method} %{URIPATH:path}
status=(?P<status>\\d+)``. Each ``%{NAME}`` token is replaced by the RE2 text of the
named pattern in ``PATTERNS`` (``%{NAME:field}`` captures it as ``field``,
``%{NAME:field:int}`` also converts it to a number); the result compiles on RE2
(``processing.linear_regex``), so matching is linear in the line whatever the tenant
wrote, and memory per pattern is capped. Python's ``re`` never sees the tenant's text:
the tokens are found with ``str.find``.

Field names may be dotted (``%{INT:user.id:int}``: a nested field); RE2 group names
cannot hold dots, so every token's group gets an internal name (``__tg0``, ...) and
``TemplatePattern.fields`` maps the groups back to the names the tenant wrote.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final, Literal

from tidegate.processing.grok_library import LIBRARY
from tidegate.processing.linear_regex import CapturingRegex, RegexError

__all__ = [
    "MAX_CAPTURES",
    "MAX_PATTERN_CHARS",
    "PATTERNS",
    "CapturedField",
    "TemplatePattern",
    "TemplatePatternError",
]

MAX_PATTERN_CHARS: Final = 4_096
MAX_CAPTURES: Final = 64
MAX_FIELD_NAME: Final = 128
_INTERNAL: Final = "__tg"

Conversion = Literal["int", "float"]

MAX_DEPTH: Final = 12
"""Library definitions nest at most this deep (``COMBINEDAPACHELOG`` needs 5)."""
MAX_EXPANDED_CHARS: Final = 32_768
"""The pattern with every token expanded; RE2's memory cap bounds the program itself."""

PATTERNS: Final[dict[str, str]] = LIBRARY
"""Grok's names (``processing.grok_library``): each is RE2 text that may use others."""


class TemplatePatternError(ValueError):
    """A pattern that cannot be a template's; the message says why, for a 400."""


@dataclass(frozen=True, slots=True)
class CapturedField:
    """A group of the compiled pattern: the field it fills and how it is converted."""

    group: str
    name: str
    conversion: Conversion | None = None


def _valid_field_name(name: str) -> bool:
    if not name or len(name) > MAX_FIELD_NAME or name.startswith(".") or name.endswith("."):
        return False
    return all(part and all(c.isalnum() or c in "_@-" for c in part) for part in name.split("."))


def _token(body: str, captures: list[CapturedField], depth: int) -> str:
    """``NAME``, ``NAME:field`` or ``NAME:field:int``: its RE2 text; its capture, and
    those of the definitions it uses, are appended to ``captures`` in pattern order."""
    parts = body.split(":")
    if len(parts) > 3:
        raise TemplatePatternError(
            f"%{{{body}}}: write %{{NAME}}, %{{NAME:field}} or %{{NAME:field:int}}"
        )
    name = parts[0]
    definition = PATTERNS.get(name)
    if definition is None:
        known = ", ".join(sorted(PATTERNS))
        raise TemplatePatternError(f"%{{{name}}} is not a known pattern name (known: {known})")
    if depth >= MAX_DEPTH:
        raise TemplatePatternError(f"%{{{name}}} nests more than {MAX_DEPTH} definitions deep")
    if len(parts) == 1:
        return f"(?:{_expand(definition, captures, depth + 1)})"
    field = parts[1]
    if not _valid_field_name(field):
        raise TemplatePatternError(
            f"%{{{body}}}: a field name is letters, digits, _, @ and -, dotted for nesting"
        )
    conversion: Conversion | None = None
    if len(parts) == 3:
        if parts[2] not in ("int", "float"):
            raise TemplatePatternError(f"%{{{body}}}: the conversion is int or float")
        conversion = "int" if parts[2] == "int" else "float"
    group = f"{_INTERNAL}{len(captures)}"
    captures.append(CapturedField(group, field, conversion))
    return f"(?P<{group}>{_expand(definition, captures, depth + 1)})"


def _escaped(pattern: str, index: int) -> bool:
    """Whether the character at ``index`` follows an odd run of backslashes."""
    run = 0
    while index - run > 0 and pattern[index - run - 1] == "\\":
        run += 1
    return run % 2 == 1


def _expand(pattern: str, captures: list[CapturedField], depth: int = 0) -> str:
    """The pattern with its ``%{...}`` tokens as RE2 text (library definitions expanded
    in turn); the tokens' captures are appended to ``captures``."""
    out: list[str] = []
    position = 0
    search = 0
    while (start := pattern.find("%{", search)) >= 0:
        search = start + 2
        if _escaped(pattern, start):  # ``\%{`` is a literal %{ for RE2
            continue
        end = pattern.find("}", start + 2)
        if end < 0:
            raise TemplatePatternError(f"the %{{ at character {start + 1} is never closed")
        out.append(pattern[position:start])
        out.append(_token(pattern[start + 2 : end], captures, depth))
        position = search = end + 1
    out.append(pattern[position:])
    return "".join(out)


class TemplatePattern:
    """A template's compiled pattern: ``fields(text)`` gives the captured fields of its
    first match in ``text`` (groups that did not take part left out, conversions
    applied), or None when it does not match. Linear time (RE2)."""

    __slots__ = ("_regex", "captures", "pattern")

    def __init__(self, pattern: str) -> None:
        if not pattern.strip():
            raise TemplatePatternError("the pattern is empty")
        if len(pattern) > MAX_PATTERN_CHARS:
            raise TemplatePatternError(f"the pattern is longer than {MAX_PATTERN_CHARS} characters")
        self.pattern = pattern
        captures: list[CapturedField] = []
        expanded = _expand(pattern, captures)
        if len(expanded) > MAX_EXPANDED_CHARS:
            raise TemplatePatternError(
                f"the pattern expands to more than {MAX_EXPANDED_CHARS} characters of RE2"
            )
        if len(captures) > MAX_CAPTURES:  # before RE2 compiles what would be refused
            raise TemplatePatternError(f"the pattern captures more than {MAX_CAPTURES} fields")
        try:
            self._regex = CapturingRegex(expanded)
        except RegexError as error:
            raise TemplatePatternError(f"not a valid RE2 pattern: {error}") from None
        tokens = {capture.group for capture in captures}
        for group in self._regex.group_names:
            if group in tokens:
                continue
            if group.startswith(_INTERNAL):
                raise TemplatePatternError(f"group names starting with {_INTERNAL} are reserved")
            captures.append(CapturedField(group, group))
        if not captures:
            raise TemplatePatternError(
                "the pattern captures nothing: name a group (?P<field>...) or a token %{NAME:field}"
            )
        if len(captures) > MAX_CAPTURES:
            raise TemplatePatternError(f"the pattern captures more than {MAX_CAPTURES} fields")
        self.captures = tuple(captures)

    @property
    def field_names(self) -> list[str]:
        return list(dict.fromkeys(capture.name for capture in self.captures))

    def fields(self, text: str) -> list[tuple[str, str | int | float]] | None:
        groups = self._regex.named_groups(text)
        if groups is None:
            return None
        found: list[tuple[str, str | int | float]] = []
        for capture in self.captures:
            value = groups.get(capture.group)
            if value is None:
                continue
            found.append((capture.name, _converted(value, capture.conversion)))
        return found

    def __repr__(self) -> str:
        return f"TemplatePattern({self.pattern!r})"


def _converted(value: str, conversion: Conversion | None) -> str | int | float:
    """The value as its conversion asks; a value that is not such a number stays text."""
    if conversion is None:
        return value
    try:
        number = int(value) if conversion == "int" else float(value)
    except ValueError:
        return value
    return number if isinstance(number, int) or math.isfinite(number) else value

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

_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
_HEX4 = r"[0-9A-Fa-f]{1,4}"
_HOST = r"[0-9A-Za-z](?:[0-9A-Za-z-]{0,62})(?:\.[0-9A-Za-z](?:[0-9A-Za-z-]{0,62}))*"
_IPV4 = rf"{_OCTET}(?:\.{_OCTET}){{3}}"
_IPV6 = "|".join(
    (
        rf"(?:{_HEX4}:){{7}}{_HEX4}",
        rf"(?:{_HEX4}:){{1,7}}:",
        rf"(?:{_HEX4}:){{1,6}}:{_HEX4}",
        *(rf"(?:{_HEX4}:){{1,{n}}}(?::{_HEX4}){{1,{7 - n}}}" for n in range(5, 0, -1)),
        rf":(?:(?::{_HEX4}){{1,7}}|:)",
    )
)
_URIPATH = r"(?:/[A-Za-z0-9$.+!*'(){},~:;=@#%&_\-]*)+"
_LEVELS = (
    r"(?i:alert|trace|debug|notice|info(?:rmation)?|warn(?:ing)?|err(?:or)?|crit(?:ical)?"
    r"|fatal|severe|emerg(?:ency)?)"
)

# Grok's common names (logstash-patterns-core's grok-patterns), written for RE2.
PATTERNS: Final[dict[str, str]] = {
    "WORD": r"\b\w+\b",
    "NOTSPACE": r"\S+",
    "SPACE": r"\s*",
    "DATA": r".*?",
    "GREEDYDATA": r".*",
    "INT": r"[+-]?[0-9]+",
    "POSINT": r"\b[1-9][0-9]*\b",
    "NONNEGINT": r"\b[0-9]+\b",
    "NUMBER": r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)",
    "BASE10NUM": r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)",
    "QUOTEDSTRING": r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'",
    "QS": r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'",
    "UUID": r"[A-Fa-f0-9]{8}-(?:[A-Fa-f0-9]{4}-){3}[A-Fa-f0-9]{12}",
    "MAC": r"(?:[A-Fa-f0-9]{2}[:-]){5}[A-Fa-f0-9]{2}",
    "IPV4": _IPV4,
    "IPV6": _IPV6,
    "IP": rf"{_IPV4}|{_IPV6}",
    "HOSTNAME": rf"\b{_HOST}\.?\b",
    "IPORHOST": rf"{_IPV4}|{_IPV6}|\b{_HOST}\.?\b",
    "HOSTPORT": rf"(?:{_IPV4}|\b{_HOST}\.?\b):[0-9]{{1,5}}",
    "USER": r"[a-zA-Z0-9._-]+",
    "USERNAME": r"[a-zA-Z0-9._-]+",
    "EMAILADDRESS": rf"[a-zA-Z0-9._%+-]+@{_HOST}",
    "PATH": r"(?:/[\w%!$@:.,+~-]*)+",
    "URIPATH": _URIPATH,
    "URIPATHPARAM": _URIPATH + r"(?:\?[A-Za-z0-9$.+!*'|(){},~@#%&/=:;_?\-\[\]<>]*)?",
    "TIMESTAMP_ISO8601": (
        r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:[.,][0-9]{1,9})?)?"
        r"(?:Z|[+-][0-9]{2}:?[0-9]{2})?"
    ),
    "HTTPDATE": r"[0-9]{2}/[A-Za-z]{3}/[0-9]{4}:[0-9]{2}:[0-9]{2}:[0-9]{2} [+-][0-9]{4}",
    "SYSLOGTIMESTAMP": r"[A-Z][a-z]{2} [ 0-9][0-9] [0-9]{2}:[0-9]{2}:[0-9]{2}",
    "LOGLEVEL": _LEVELS,
}


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


def _token(body: str, index: int) -> tuple[str, CapturedField | None]:
    """``NAME``, ``NAME:field`` or ``NAME:field:int``: the RE2 text and its capture."""
    parts = body.split(":")
    if len(parts) > 3:
        raise TemplatePatternError(
            f"%{{{body}}}: write %{{NAME}}, %{{NAME:field}} or %{{NAME:field:int}}"
        )
    name = parts[0]
    expansion = PATTERNS.get(name)
    if expansion is None:
        known = ", ".join(sorted(PATTERNS))
        raise TemplatePatternError(f"%{{{name}}} is not a known pattern name (known: {known})")
    if len(parts) == 1:
        return f"(?:{expansion})", None
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
    group = f"{_INTERNAL}{index}"
    return f"(?P<{group}>{expansion})", CapturedField(group, field, conversion)


def _escaped(pattern: str, index: int) -> bool:
    """Whether the character at ``index`` follows an odd run of backslashes."""
    run = 0
    while index - run > 0 and pattern[index - run - 1] == "\\":
        run += 1
    return run % 2 == 1


def _expand(pattern: str) -> tuple[str, list[CapturedField]]:
    """The pattern with its ``%{...}`` tokens as RE2 text, and the tokens' captures."""
    out: list[str] = []
    captures: list[CapturedField] = []
    position = 0
    search = 0
    while (start := pattern.find("%{", search)) >= 0:
        search = start + 2
        if _escaped(pattern, start):  # ``\%{`` is a literal %{ for RE2
            continue
        end = pattern.find("}", start + 2)
        if end < 0:
            raise TemplatePatternError(f"the %{{ at character {start + 1} is never closed")
        regex, capture = _token(pattern[start + 2 : end], len(captures))
        out.append(pattern[position:start])
        out.append(regex)
        if capture is not None:
            captures.append(capture)
        position = search = end + 1
    out.append(pattern[position:])
    return "".join(out), captures


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
        expanded, captures = _expand(pattern)
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

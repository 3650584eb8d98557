"""An account's active parsing templates, compiled for the hot path.

``TemplateSet.parse`` is the step ``logs.parsing.parse_text`` takes before the built-in
forms: the first active template (in the account's order) whose pattern matches the
line gives its fields; a line that none matches falls through to the built-in parsing.
The patterns are ``processing.grok`` patterns on RE2: linear in the line, memory capped.

The fields are shaped as the built-in parsers shape theirs (docs/line-parsing.md): a
dotted name nests (``user.id``), a reserved top-level name gets a ``_`` in front, and a
``level`` field sets (and overrides) the line's level, as a JSON or logfmt ``level``
does; without one, a level word at the start of the text fills a missing level.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from tidegate.logs.parsing import Parsed, canonical_level, level_from_text
from tidegate.models import ParsingTemplate
from tidegate.processing.grok import TemplatePattern, TemplatePatternError
from tidegate.search.compiler import PREFIXED_FIELDS

log = logging.getLogger(__name__)

__all__ = ["NO_TEMPLATES", "TemplateSet", "template_fields"]

ACTIVE = "active"


def template_fields(found: Iterable[tuple[str, Any]]) -> Parsed:
    """A template's captures as parsed fields and the level they give."""
    fields: dict[str, Any] = {}
    for name, value in found:
        head, _, rest = name.partition(".")
        if head in PREFIXED_FIELDS:
            head = "_" + head
        if not rest:
            fields.setdefault(head, value)
            continue
        target: Any = fields.setdefault(head, {})
        *parents, leaf = rest.split(".")
        for part in parents:
            if not isinstance(target, dict):
                break
            target = target.setdefault(part, {})
        if isinstance(target, dict):
            target.setdefault(leaf, value)
    level = fields.get("level")
    if isinstance(level, str) and level.strip():
        return Parsed(fields=fields, level=canonical_level(level), overrides=True)
    return Parsed(fields=fields)


class TemplateSet:
    """An account's active templates in order, ready to parse lines."""

    __slots__ = ("patterns",)

    def __init__(self, patterns: Sequence[TemplatePattern]) -> None:
        self.patterns = tuple(patterns)

    @classmethod
    def from_rows(cls, rows: Iterable[ParsingTemplate]) -> TemplateSet:
        """The active ones of ``rows``, by position. A stored pattern that no longer
        compiles (it was checked when saved) is left out rather than failing ingestion."""
        patterns = []
        for row in sorted(rows, key=lambda row: (row.position, row.created_at, row.id)):
            if row.state != ACTIVE:
                continue
            try:
                patterns.append(TemplatePattern(row.pattern))
            except TemplatePatternError as error:
                log.warning("parsing template %s left out: %s", row.id, error)
        return cls(patterns)

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def parse(self, text: str) -> Parsed | None:
        """The fields of the first template that matches ``text``; None: none does."""
        for pattern in self.patterns:
            found = pattern.fields(text)
            if found is not None:
                parsed = template_fields(found)
                if parsed.level is None:  # as for a JSON line without a level field
                    parsed.level = level_from_text(text)
                return parsed
        return None


NO_TEMPLATES = TemplateSet(())

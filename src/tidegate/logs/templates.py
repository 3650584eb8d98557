"""An account's active parsing templates, compiled for the hot path.

``TemplateSet.parse`` is the step ``logs.parsing.parse_text`` takes before the built-in
forms: the first active template (in the account's order) whose pattern matches the
line gives its fields; a line that none matches falls through to the built-in parsing.
The patterns are ``processing.grok`` patterns on RE2: linear in the line, memory capped.

The fields are shaped as the built-in parsers shape theirs (docs/line-parsing.md): a
dotted name nests (``user.id``), a reserved top-level name gets a ``_`` in front, and a
``level`` field sets (and overrides) the line's level, as a JSON or logfmt ``level``
does; without one, a level word at the start of the text fills a missing level. A
capture named as export names the line's own app, host and time (``_app``, ``_host``,
``_ts``) sets them instead of becoming a field (``logs.parsing.parse_line`` applies
them; the time in any form ``logs.timestamps.text_time`` reads).

``TemplateSet.counting`` gives one batch's parser, which also counts how many lines
each template took (``TemplateRun.hits``): ``logs.template_counts`` adds those up.
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

__all__ = ["LINE_CAPTURES", "NO_TEMPLATES", "TemplateRun", "TemplateSet", "template_fields"]

ACTIVE = "active"


# Captures that set the line's own app, host and time (named as export names them).
LINE_CAPTURES = ("_app", "_host", "_ts")


def template_fields(found: Iterable[tuple[str, Any]]) -> Parsed:
    """A template's captures as parsed fields, the level they give, and the line's own
    app, host and time when it captured them (``LINE_CAPTURES``)."""
    fields: dict[str, Any] = {}
    own: dict[str, str] = {}
    for name, value in found:
        if name in LINE_CAPTURES:
            own.setdefault(name, str(value))
            continue
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
    parsed = Parsed(
        fields=fields or None,
        app=own.get("_app", "").strip() or None,
        host=own.get("_host", "").strip() or None,
        time=own.get("_ts"),
    )
    level = fields.get("level")
    if isinstance(level, str) and level.strip():
        parsed.level, parsed.overrides = canonical_level(level), True
    return parsed


class TemplateSet:
    """An account's active templates in order, ready to parse lines. ``ids``: each
    pattern's template id (None for a pattern not saved, as the preview's)."""

    __slots__ = ("ids", "patterns")

    def __init__(
        self, patterns: Sequence[TemplatePattern], ids: Sequence[str | None] | None = None
    ) -> None:
        self.patterns = tuple(patterns)
        self.ids = tuple(ids) if ids is not None else (None,) * len(self.patterns)

    @classmethod
    def from_rows(cls, rows: Iterable[ParsingTemplate]) -> TemplateSet:
        """The active ones of ``rows``, by position. A stored pattern that no longer
        compiles (it was checked when saved) is left out rather than failing ingestion."""
        patterns = []
        ids: list[str | None] = []
        for row in sorted(rows, key=lambda row: (row.position, row.created_at, row.id)):
            if row.state != ACTIVE:
                continue
            try:
                patterns.append(TemplatePattern(row.pattern))
            except TemplatePatternError as error:
                log.warning("parsing template %s left out: %s", row.id, error)
                continue
            ids.append(row.id)
        return cls(patterns, ids)

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def match(self, text: str) -> tuple[int, Parsed] | None:
        """Which template (its index) matches ``text`` first and the fields it gives;
        None: none does."""
        for index, pattern in enumerate(self.patterns):
            found = pattern.fields(text)
            if found is not None:
                parsed = template_fields(found)
                if parsed.level is None:  # as for a JSON line without a level field
                    parsed.level = level_from_text(text)
                return index, parsed
        return None

    def parse(self, text: str) -> Parsed | None:
        """The fields of the first template that matches ``text``; None: none does."""
        found = self.match(text)
        return found[1] if found is not None else None

    def counting(self) -> TemplateRun:
        """A parser for one batch of lines that counts each template's matches."""
        return TemplateRun(self)


class TemplateRun:
    """``TemplateSet.parse`` for one batch (one thread), counting the lines each saved
    template takes in ``hits`` (template id: lines)."""

    __slots__ = ("hits", "templates")

    def __init__(self, templates: TemplateSet) -> None:
        self.templates = templates
        self.hits: dict[str, int] = {}

    def parse(self, text: str) -> Parsed | None:
        found = self.templates.match(text)
        if found is None:
            return None
        index, parsed = found
        template_id = self.templates.ids[index]
        if template_id is not None:
            self.hits[template_id] = self.hits.get(template_id, 0) + 1
        return parsed


NO_TEMPLATES = TemplateSet(())

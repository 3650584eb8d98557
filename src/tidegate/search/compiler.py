"""Turns a parsed query into nested closures over ``LogLine``.

Everything that can be decided once is decided here: literals are case-folded, field
names are resolved to an attribute or a path into ``meta``, word-start patterns are
compiled, and the common cases (a built-in field, a string value) get closures of their
own. Evaluating a line then allocates nothing beyond what ``LogLine.folded`` caches.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from operator import attrgetter

from tidegate.search.line import LogLine
from tidegate.search.nodes import (
    And,
    Exists,
    Field,
    LineNode,
    Match,
    Not,
    Or,
    Phrase,
    Term,
    ValueOr,
)
from tidegate.search.values import AnyMatch, compile_text_match, compile_value, merge_matches

LinePredicate = Callable[[LogLine], bool]
FieldGetter = Callable[[LogLine], object]

# The platform's reserved field names (as its export records spell them) that name
# something every line has: ``_account`` (the line's account; every line has one, so
# ``_account:*`` selects all of them), and ``_host``, ``_app``, ``_file``, ``_line`` (the
# same as ``host``, ``app``, ``file`` and the line text). docs/search-syntax.md.
RESERVED_FIELDS: dict[str, str] = {
    "_account": "account",
    "_host": "host",
    "_app": "app",
    "_file": "file",
    "_line": "line",
}
BUILTIN_FIELDS = frozenset({"host", "app", "level", "source", "file", "namespace"}) | frozenset(
    RESERVED_FIELDS
)
# Names the platform keeps for itself: a field of that name parsed out of a line's text
# (a JSON object, logfmt) is stored as ``_<name>`` (``status`` as ``_status``,
# ``_source`` as ``__source``), and a query for the plain name finds both spellings
# (``status:200`` tests ``status`` and ``_status``). docs/line-parsing.md.
PREFIXED_FIELDS = frozenset(
    {
        "status",
        "_source",
        "_type",
        "_index",
        "_id",
        "_account",
        "_app",
        "_env",
        "_file",
        "_host",
        "_ip",
        "_lid",
        "_line",
        "_logtype",
        "_mac",
        "_meta",
        "_tag",
        "_ts",
    }
)
_WORD_CHAR = re.compile(r"\w")
_NON_WORD = re.compile(r"\W")
_AFTER_NON_WORD = re.compile(r"(?<=\W)")
_MARK = "\x00"


def compile_line(node: LineNode) -> LinePredicate:
    if isinstance(node, Term):
        return _compile_term(node.text)
    if isinstance(node, Phrase):
        phrase = node.text.casefold()
        return lambda line: phrase in line.folded
    if isinstance(node, Field):
        return _compile_field(node)
    if isinstance(node, Not):
        inner = compile_line(node.operand)
        return lambda line: not inner(line)
    operands = tuple(compile_line(operand) for operand in _flatten(node))
    return _every(operands) if isinstance(node, And) else _some(operands)


def _flatten(node: And | Or) -> list[LineNode]:
    """``(a b) c`` is ``a b c``: one loop instead of nested closures."""
    flat: list[LineNode] = []
    for operand in node.operands:
        if isinstance(operand, And | Or) and type(operand) is type(node):
            flat.extend(_flatten(operand))
        else:
            flat.append(operand)
    return flat


def _every(predicates: tuple[LinePredicate, ...]) -> LinePredicate:
    if len(predicates) == 2:
        first, second = predicates
        return lambda line: first(line) and second(line)

    def every(line: LogLine) -> bool:
        for predicate in predicates:
            if not predicate(line):
                return False
        return True

    return every


def _some(predicates: tuple[LinePredicate, ...]) -> LinePredicate:
    if len(predicates) == 2:
        first, second = predicates
        return lambda line: first(line) or second(line)

    def some(line: LogLine) -> bool:
        for predicate in predicates:
            if predicate(line):
                return True
        return False

    return some


def _compile_term(text: str) -> LinePredicate:
    term = text.casefold()
    if _WORD_CHAR.match(term) is None:
        # A term that starts with punctuation ('/api', '[error]') starts a word wherever
        # it occurs.
        return lambda line: term in line.folded
    # The term must sit at the start of a word: no word character right before it.
    # Most lines are settled by one find() and one character test; a line whose first
    # occurrence is inside a word is searched on further.
    if _NON_WORD.search(term) is None:
        # A word (no punctuation inside): a literal after a word boundary, which the
        # regular expression tries at word starts only and within one word of the line
        # each time, so it reads each character of the line at most twice.
        search = re.compile(r"\b" + re.escape(term)).search

        def further(folded: str, found: int) -> bool:
            return search(folded, found + 1) is not None

    else:
        # Punctuation inside ('a.b'): an occurrence can span words, and the boundary
        # search would compare up to the whole term at each word start (line length
        # times term length). Marked, a word start is a literal: one linear find.
        needle = _mark_word_starts(term)

        def further(folded: str, found: int) -> bool:
            return needle in _mark_word_starts(folded)

    def at_word_start(line: LogLine) -> bool:
        folded = line.folded
        found = folded.find(term)
        if found <= 0:
            return found == 0
        before = folded[found - 1]
        if not before.isalnum() and before != "_":
            return True
        return further(folded, found)

    return at_word_start


def _mark_word_starts(text: str) -> str:
    """``text`` with a mark before its start and after each non-word character.

    Every character keeps its own spelling, a non-word one followed by the mark, so an
    occurrence of a marked term that starts with a word character, mark included, lines
    up with the line's characters and starts right after a non-word character or at the
    start: at a word start. (A mark that is an original NUL is followed by its own mark,
    never by the word character the term starts with.)"""
    return _MARK + _AFTER_NON_WORD.sub(_MARK, text)


def _compile_field(node: Field) -> LinePredicate:
    if node.name in BUILTIN_FIELDS:
        return _compile_builtin_field(node)
    get = field_getter(node.name)
    test = compile_value(node.test)

    def field_matches(line: LogLine) -> bool:
        value = get(line)
        if value is None:
            return False
        if isinstance(value, (list, tuple)):  # faster than list | tuple
            # An array matches when one of its elements does.
            for item in value:
                if item is not None and test(item):
                    return True
            return False
        return test(value)

    return field_matches


def _compile_builtin_field(node: Field) -> LinePredicate:
    """Built-in fields hold a string or None: no arrays, no conversions."""
    if node.name == "_account" and isinstance(node.test, Exists):
        return _every_line  # every line belongs to an account, known here or not
    get: Callable[[LogLine], str | None] = attrgetter(RESERVED_FIELDS.get(node.name, node.name))
    match = merge_matches(node.test) if isinstance(node.test, ValueOr) else node.test
    if isinstance(match, Match | AnyMatch):
        on_text = compile_text_match(match)
        return lambda line: (value := get(line)) is not None and on_text(value)
    test = compile_value(node.test)
    return lambda line: (value := get(line)) is not None and test(value)


def _every_line(line: LogLine) -> bool:
    return True


def field_getter(name: str) -> FieldGetter:
    """Where a field name points: a built-in attribute, or a path into ``meta``."""
    if name in BUILTIN_FIELDS:
        return attrgetter(RESERVED_FIELDS.get(name, name))
    return _meta_getter(meta_path(name))


def meta_path(name: str) -> tuple[str, ...]:
    """The keys into ``meta`` a non-built-in field name stands for (``meta.`` is
    stripped; ``meta`` alone is the empty path, the meta object itself)."""
    parts = name.split(".")
    if parts[0] == "meta":
        parts = parts[1:]
    return tuple(parts)


def _meta_getter(path: tuple[str, ...]) -> FieldGetter:
    if not path:
        return attrgetter("meta")
    if path[0] in PREFIXED_FIELDS:
        return _both_spellings(
            _plain_meta_getter(path), _plain_meta_getter(("_" + path[0], *path[1:]))
        )
    return _plain_meta_getter(path)


def _both_spellings(plain: FieldGetter, prefixed: FieldGetter) -> FieldGetter:
    """A reserved name's value as sent (``status``) and as parsed (``_status``): one of
    them, or both as an array (a line matches when either does)."""

    def get(line: LogLine) -> object:
        first = plain(line)
        second = prefixed(line)
        if second is None:
            return first
        if first is None:
            return second
        return [*_items(first), *_items(second)]

    return get


def _items(value: object) -> list[object]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _plain_meta_getter(path: tuple[str, ...]) -> FieldGetter:
    if len(path) == 1:
        (key,) = path
        return lambda line: None if (meta := line.meta) is None else meta.get(key)
    flat_key = ".".join(path)

    def get(line: LogLine) -> object:
        meta = line.meta
        if meta is None:
            return None
        # A key that literally contains the dots (flattened JSON) wins over nesting.
        value = meta.get(flat_key)
        if value is not None:
            return value
        value = meta
        for key in path:
            if type(value) is not dict and not isinstance(value, Mapping):
                return None
            value = value.get(key)
            if value is None:
                return None
        return value

    return get

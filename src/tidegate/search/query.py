"""The compiled form of a query, and the one way to get one."""

from __future__ import annotations

from tidegate.search.compiler import LinePredicate, compile_line
from tidegate.search.nodes import LineNode
from tidegate.search.parser import parse


class Query:
    """A query parsed and compiled once; evaluate it with ``matches(line)``.

    ``matches`` is the compiled closure itself (an attribute, not a method), which
    spares one call per line per rule. ``tree`` is the parsed query
    (``tidegate.search.nodes``), for translators such as ``tidegate.logs.sql_filter``.
    """

    __slots__ = ("fields", "matches", "text", "tree")

    text: str
    fields: frozenset[str]
    matches: LinePredicate
    tree: LineNode

    def __init__(
        self, text: str, fields: frozenset[str], matches: LinePredicate, tree: LineNode
    ) -> None:
        self.text = text
        self.fields = fields
        self.matches = matches
        self.tree = tree

    def __repr__(self) -> str:
        return f"Query({self.text!r})"


def compile_query(text: str) -> Query:
    """Parse and compile ``text``; raises ``QuerySyntaxError`` when it does not parse.

    ``Query.fields`` holds every field name the query uses, exactly as written
    (``host``, ``user.id``, ``meta.x``, ``_retention``), for callers to vet.
    """
    tree, fields = parse(text)
    return Query(text, fields, compile_line(tree), tree)

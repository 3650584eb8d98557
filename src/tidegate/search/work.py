"""How much work a query asks of a read, and the limits on it (docs/search-syntax.md,
"Limits").

A read of stored lines tests every candidate line against each of the query's tests,
and each becomes a condition of the database's scan: a query of 600 OR'd terms fits
in 4,096 characters and cost seconds per page. The length limit does not bound that
work; these do, before anything is read: the number of tests (terms, phrases and field
values) and of ``field:*`` wildcards (each looks into every line's fields). The nesting
of groups is bounded by the parser (``MAX_NESTING_DEPTH``).
"""

from __future__ import annotations

from dataclasses import dataclass

from tidegate.search.nodes import (
    And,
    Exists,
    Field,
    LineNode,
    Not,
    Or,
    ValueAnd,
    ValueNode,
    ValueNot,
    ValueOr,
)

MAX_QUERY_TERMS = 100
MAX_QUERY_WILDCARDS = 10


@dataclass(slots=True)
class QueryWork:
    terms: int = 0
    wildcards: int = 0

    def too_much(self) -> str | None:
        """A sentence naming the limit the query passes, or None."""
        if self.terms > MAX_QUERY_TERMS:
            return (
                f"the query has {self.terms} terms; at most {MAX_QUERY_TERMS} are allowed "
                "(narrow it, or split it into several queries)"
            )
        if self.wildcards > MAX_QUERY_WILDCARDS:
            return (
                f"the query has {self.wildcards} 'field:*' wildcards; at most "
                f"{MAX_QUERY_WILDCARDS} are allowed"
            )
        return None


def query_work(tree: LineNode) -> QueryWork:
    work = QueryWork()
    _line(tree, work)
    return work


# Recursion is bounded by the parser's nesting limit.
def _line(node: LineNode, work: QueryWork) -> None:
    if isinstance(node, And | Or):
        for operand in node.operands:
            _line(operand, work)
    elif isinstance(node, Not):
        _line(node.operand, work)
    elif isinstance(node, Field):
        _value(node.test, work)
    else:  # Term, Phrase
        work.terms += 1


def _value(node: ValueNode, work: QueryWork) -> None:
    if isinstance(node, ValueAnd | ValueOr):
        for operand in node.operands:
            _value(operand, work)
    elif isinstance(node, ValueNot):
        _value(node.operand, work)
    else:  # Exists, Compare, Match
        work.terms += 1
        if isinstance(node, Exists):
            work.wildcards += 1

"""A hand-written recursive-descent parser for the search syntax.

Grammar (whitespace separates operands; see docs/search-syntax.md)::

    query    := and
    and      := or ( ["AND"] or )*          -- plain whitespace is AND
    or       := unary ( "OR" unary )*       -- OR binds tighter than AND
    unary    := "-"* primary
    primary  := "(" and ")" | PHRASE | FIELD ":" value | TERM
    value    := "(" vand ")" | atom         -- vand/vor/vunary as above, over atoms
    atom     := "*" | (">"|">="|"<"|"<=") NUMBER | "="{0,3} (QUOTED | WORD | list)
    list     := "[" item ("," item)* "]"

Every character is consumed once (the only backtracking is over the whitespace before
a possible ``OR``), regular expressions are used only to scan runs of plain characters,
and nesting is capped, so parsing is linear in the (capped) length of the query.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TypeVar

from tidegate.search.errors import QuerySyntaxError
from tidegate.search.nodes import (
    And,
    Compare,
    Exists,
    Field,
    LineNode,
    Match,
    Not,
    Or,
    Phrase,
    Term,
    ValueAnd,
    ValueNode,
    ValueNot,
    ValueOr,
)
from tidegate.search.values import finite, parse_number

MAX_QUERY_LENGTH = 4096
MAX_NESTING_DEPTH = 32

_WHITESPACE = re.compile(r"\s*")
_TERM = re.compile(r'[^\s()":]*')  # a bare term or a field name
_VALUE = re.compile(r'[^\s()"]*')  # an unquoted value or number (a ':' in a value is an error)
_LIST_ITEM = re.compile(r'[^\s()"\[\],]*')
_QUOTED_CHUNK = re.compile(r'[^"\\]*')
_KEYWORDS = ("AND", "OR")
_COMPARATORS = (">=", "<=", ">", "<")

N = TypeVar("N", LineNode, ValueNode)


def parse(text: str) -> tuple[LineNode, frozenset[str]]:
    """The tree of ``text`` and the field names it references, as written."""
    if len(text) > MAX_QUERY_LENGTH:
        raise QuerySyntaxError(
            f"the query is {len(text)} characters long; the limit is {MAX_QUERY_LENGTH}",
            MAX_QUERY_LENGTH,
        )
    return _Parser(text).parse()


def _excerpt(text: str, limit: int = 30) -> str:
    """``text`` shortened for an error message."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.end = len(text)
        self.pos = 0
        self.depth = 0
        self.fields: set[str] = set()
        self.field_name = ""

    # -- scanning ---------------------------------------------------------------------

    def error(self, reason: str, position: int | None = None) -> QuerySyntaxError:
        return QuerySyntaxError(reason, self.pos if position is None else position)

    def skip_whitespace(self) -> None:
        match = _WHITESPACE.match(self.text, self.pos)
        assert match is not None  # \s* always matches
        self.pos = match.end()

    def scan(self, pattern: re.Pattern[str]) -> str:
        match = pattern.match(self.text, self.pos)
        assert match is not None  # every scanning pattern can match the empty string
        self.pos = match.end()
        return match.group()

    def at_delimiter(self, position: int) -> bool:
        """End of query, whitespace or ')': where an operand may end."""
        return position >= self.end or self.text[position] == ")" or self.text[position].isspace()

    def keyword(self) -> str | None:
        for keyword in _KEYWORDS:
            if self.text.startswith(keyword, self.pos):
                after = self.pos + len(keyword)
                if self.at_delimiter(after) or self.text[after] == "(":
                    return keyword
        return None

    def expect_delimiter(self, what: str) -> None:
        if self.at_delimiter(self.pos):
            return
        char = self.text[self.pos]
        if char == '"':
            raise self.error(f"unexpected quote right after {what}; quote the whole term")
        raise self.error(f"unexpected {char!r} right after {what}; separate terms with spaces")

    def quoted(self) -> str:
        """A double-quoted string; ``\\"`` and ``\\\\`` are escapes, other ``\\`` stay."""
        start = self.pos
        self.pos += 1
        chunks: list[str] = []
        while True:
            chunks.append(self.scan(_QUOTED_CHUNK))
            if self.pos >= self.end:
                raise self.error("unbalanced quote: this '\"' is never closed", start)
            if self.text[self.pos] == '"':
                self.pos += 1
                return "".join(chunks)
            if self.pos + 1 >= self.end:
                raise self.error("unbalanced quote: this '\"' is never closed", start)
            escaped = self.text[self.pos + 1]
            chunks.append(escaped if escaped in '"\\' else "\\" + escaped)
            self.pos += 2

    # -- boolean structure, shared by line and value expressions ------------------------

    def parse(self) -> tuple[LineNode, frozenset[str]]:
        self.skip_whitespace()
        if self.pos >= self.end:
            raise self.error("the query is empty", 0)
        node = self.conjunction(self.line_unary, And, Or)
        if self.pos < self.end:  # conjunction() stops only at the end or at ')'
            raise self.error("unbalanced parenthesis: this ')' has no matching '('")
        return node, frozenset(self.fields)

    def conjunction(
        self,
        operand: Callable[[], N],
        make_and: Callable[[tuple[N, ...]], N],
        make_or: Callable[[tuple[N, ...]], N],
    ) -> N:
        operands: list[N] = []
        while True:
            self.skip_whitespace()
            if self.pos >= self.end or self.text[self.pos] == ")":
                break
            keyword = self.keyword()
            if keyword is not None:
                if not operands:
                    raise self.error(f"{keyword} has nothing before it")
                self.operator_operand(keyword)  # only AND gets here: disjunction eats OR
            operands.append(self.disjunction(operand, make_or))
        return _combine(operands, make_and)

    def disjunction(self, operand: Callable[[], N], make_or: Callable[[tuple[N, ...]], N]) -> N:
        operands = [operand()]
        while True:
            before = self.pos
            self.skip_whitespace()
            if self.keyword() != "OR":
                self.pos = before
                return _combine(operands, make_or)
            self.operator_operand("OR")
            operands.append(operand())

    def operator_operand(self, keyword: str) -> None:
        """Step over ``keyword`` to the start of its right-hand operand."""
        at = self.pos
        self.pos += len(keyword)
        self.skip_whitespace()
        if self.pos >= self.end or self.text[self.pos] == ")":
            raise self.error(f"{keyword} has nothing after it", at)
        following = self.keyword()
        if following is not None:
            raise self.error(f"{following} cannot follow {keyword}")

    def negations(self) -> int:
        start = self.pos
        while self.pos < self.end and self.text[self.pos] == "-":
            self.pos += 1
        if self.pos > start and self.at_delimiter(self.pos):
            raise self.error("'-' must be directly followed by what it negates", start)
        return self.pos - start

    def group(
        self,
        operand: Callable[[], N],
        make_and: Callable[[tuple[N, ...]], N],
        make_or: Callable[[tuple[N, ...]], N],
    ) -> N:
        start = self.pos
        self.depth += 1
        if self.depth > MAX_NESTING_DEPTH:
            raise self.error(
                f"parentheses nest too deeply; at most {MAX_NESTING_DEPTH} levels are allowed",
                start,
            )
        self.pos += 1
        self.skip_whitespace()
        if self.pos >= self.end:
            raise self.error("unbalanced parenthesis: this '(' is never closed", start)
        if self.text[self.pos] == ")":
            raise self.error("empty parentheses", start)
        node = self.conjunction(operand, make_and, make_or)
        if self.pos >= self.end:
            raise self.error("unbalanced parenthesis: this '(' is never closed", start)
        self.pos += 1
        self.depth -= 1
        self.expect_delimiter("')'")
        return node

    # -- line expressions ---------------------------------------------------------------

    def line_unary(self) -> LineNode:
        negated = self.negations() % 2 == 1
        node = self.line_primary()
        return Not(node) if negated else node

    def line_primary(self) -> LineNode:
        start = self.pos
        char = self.text[start]
        if char == "(":
            return self.group(self.line_unary, And, Or)
        if char == ")":
            raise self.error("unbalanced parenthesis: this ')' has no matching '('")
        if char == '"':
            phrase = self.quoted()
            if not phrase:
                raise self.error("empty quoted phrase", start)
            self.expect_delimiter("a quoted phrase")
            return Phrase(phrase)
        word = self.scan(_TERM)
        if self.pos < self.end and self.text[self.pos] == ":":
            return self.field(word, start)
        if word in _KEYWORDS:
            raise self.error(f"'-' cannot negate {word}; write \"{word}\" for the word", start)
        self.expect_delimiter("a term")
        return Term(word)

    def field(self, name: str, start: int) -> Field:
        if not name:
            raise self.error("empty field name before ':'", start)
        if "" in name.split("."):
            raise self.error(f"field name {_excerpt(name)!r} has an empty part between dots", start)
        self.pos += 1  # the ':'
        if self.at_delimiter(self.pos):
            spaced = self.pos < self.end and self.text[self.pos].isspace()
            space = " (no space is allowed after ':')" if spaced else ""
            raise self.error(f"missing value after '{_excerpt(name)}:'{space}")
        self.fields.add(name)
        self.field_name = name
        if self.text[self.pos] == "(":
            return Field(name, self.group(self.value_unary, ValueAnd, ValueOr))
        return Field(name, self.value_atom(in_group=False))

    # -- value expressions (after 'field:') -----------------------------------------------

    def value_unary(self) -> ValueNode:
        negated = self.negations() % 2 == 1
        node = self.value_primary()
        return ValueNot(node) if negated else node

    def value_primary(self) -> ValueNode:
        char = self.text[self.pos]
        if char == "(":
            return self.group(self.value_unary, ValueAnd, ValueOr)
        if char == ")":
            raise self.error("unbalanced parenthesis: this ')' has no matching '('")
        return self.value_atom(in_group=True)

    def value_atom(self, *, in_group: bool) -> ValueNode:
        start = self.pos
        char = self.text[start]
        if char == "*" and self.at_delimiter(start + 1):
            self.pos += 1
            return Exists()
        if char in "<>":
            return self.comparison()
        equals = 0
        while self.pos < self.end and self.text[self.pos] == "=":
            equals += 1
            self.pos += 1
        if equals > 3:
            raise self.error("too many '='; use '=', '==' or '==='", start)
        exact, case_sensitive = equals >= 2, equals in (1, 3)
        if self.at_delimiter(self.pos):
            raise self.error(f"missing value after {'=' * equals!r}", start)
        char = self.text[self.pos]
        if char == "[":
            items = self.value_list()
            matches = [Match(item, exact, case_sensitive) for item in items]
            return _combine(matches, ValueOr)
        if char == '"':
            value = self.quoted()
            self.expect_delimiter("a quoted value")
            return Match(value, exact, case_sensitive)
        value_start = self.pos
        value = self.scan(_VALUE)
        if not value:  # e.g. '==(': groups take their modifiers inside
            raise self.error(f"missing value after {'=' * equals!r}", start)
        colon = value.find(":")
        if colon >= 0:
            raise self.error(
                f"a ':' inside a value must be quoted, as in "
                f'{_excerpt(self.field_name)}:"{_excerpt(value)}"',
                value_start + colon,
            )
        if in_group and equals == 0 and value in _KEYWORDS:
            raise self.error(f"'-' cannot negate {value}; write \"{value}\" for the word", start)
        self.expect_delimiter("a value")
        return Match(value, exact, case_sensitive)

    def comparison(self) -> Compare:
        start = self.pos
        op = next(op for op in _COMPARATORS if self.text.startswith(op, start))
        self.pos += len(op)
        self.skip_whitespace()  # 'status:(>100 AND <= 503)': a space may follow the operator
        number_start = self.pos
        raw = self.scan(_VALUE)
        if not raw:
            raise self.error(f"missing number after '{op}'", start)
        number = parse_number(raw)
        if number is None:
            raise self.error(
                f"'{op}' must be followed by a number, not {_excerpt(raw)!r}", number_start
            )
        if not finite(number):
            raise self.error(f"number {_excerpt(raw)!r} is out of range", number_start)
        self.expect_delimiter("a number")
        return Compare(op, number)

    def value_list(self) -> list[str]:
        start = self.pos
        self.pos += 1
        items: list[str] = []
        while True:
            self.skip_whitespace()
            if self.pos >= self.end:
                raise self.error("unbalanced bracket: this '[' is never closed", start)
            if self.text[self.pos] == '"':
                items.append(self.quoted())
            else:
                item_start = self.pos
                item = self.scan(_LIST_ITEM)
                if not item:
                    char = self.text[self.pos]
                    if char == "]" and not items:
                        raise self.error("empty list", start)
                    if char in ",]":
                        raise self.error("empty list item", item_start)
                    raise self.error(f"unexpected {char!r} in the list; quote the item", item_start)
                colon = item.find(":")
                if colon >= 0:
                    raise self.error("a ':' inside a list item must be quoted", item_start + colon)
                items.append(item)
            self.skip_whitespace()
            if self.pos >= self.end:
                raise self.error("unbalanced bracket: this '[' is never closed", start)
            char = self.text[self.pos]
            self.pos += 1
            if char == "]":
                self.expect_delimiter("']'")
                return items
            if char != ",":
                raise self.error(f"expected ',' or ']' in the list, found {char!r}", self.pos - 1)


def _combine(operands: Sequence[N], make: Callable[[tuple[N, ...]], N]) -> N:
    return operands[0] if len(operands) == 1 else make(tuple(operands))

"""The parsed form of a query: a small tree, rendered back fully parenthesised by str().

Two kinds of node: line nodes test a whole ``LogLine``; value nodes (inside
``field:...``) test one field value.
"""

from __future__ import annotations

import json
from dataclasses import dataclass


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class Term:
    """A bare word: matches where a word of the line starts with it."""

    text: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class Phrase:
    """A quoted phrase: matches anywhere in the line."""

    text: str

    def __str__(self) -> str:
        return _quote(self.text)


@dataclass(frozen=True, slots=True)
class Field:
    """``name:test``; ``name`` is the field name exactly as written."""

    name: str
    test: ValueNode

    def __str__(self) -> str:
        return f"{self.name}:{self.test}"


@dataclass(frozen=True, slots=True)
class And:
    operands: tuple[LineNode, ...]

    def __str__(self) -> str:
        return "(" + " AND ".join(map(str, self.operands)) + ")"


@dataclass(frozen=True, slots=True)
class Or:
    operands: tuple[LineNode, ...]

    def __str__(self) -> str:
        return "(" + " OR ".join(map(str, self.operands)) + ")"


@dataclass(frozen=True, slots=True)
class Not:
    operand: LineNode

    def __str__(self) -> str:
        return f"-{self.operand}"


@dataclass(frozen=True, slots=True)
class Exists:
    """``field:*``."""

    def __str__(self) -> str:
        return "*"


@dataclass(frozen=True, slots=True)
class Compare:
    """``field:>=400`` and friends; ``op`` is one of ``>``, ``>=``, ``<``, ``<=``."""

    op: str
    number: int | float

    def __str__(self) -> str:
        return f"{self.op}{self.number}"


@dataclass(frozen=True, slots=True)
class Match:
    """A value: prefix or exact, case-insensitive or case-sensitive."""

    value: str
    exact: bool = False
    case_sensitive: bool = False

    def __str__(self) -> str:
        modifier = {(False, False): "", (False, True): "=", (True, False): "=="}.get(
            (self.exact, self.case_sensitive), "==="
        )
        return f"{modifier}{_quote(self.value)}"


@dataclass(frozen=True, slots=True)
class ValueAnd:
    operands: tuple[ValueNode, ...]

    def __str__(self) -> str:
        return "(" + " AND ".join(map(str, self.operands)) + ")"


@dataclass(frozen=True, slots=True)
class ValueOr:
    """Also what a list ``[a,b]`` parses to."""

    operands: tuple[ValueNode, ...]

    def __str__(self) -> str:
        return "(" + " OR ".join(map(str, self.operands)) + ")"


@dataclass(frozen=True, slots=True)
class ValueNot:
    operand: ValueNode

    def __str__(self) -> str:
        return f"-{self.operand}"


LineNode = Term | Phrase | Field | And | Or | Not
ValueNode = Exists | Compare | Match | ValueAnd | ValueOr | ValueNot

"""How a field's value is read as text or as a number, and value-level predicates.

The predicates test the common case (a ``str``, an ``int``) with an exact type check
before falling back to the general conversion: this runs for every line and rule.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from tidegate.search.nodes import Compare, Exists, Match, ValueAnd, ValueNode, ValueNot, ValueOr

ValuePredicate = Callable[[object], bool]

# Plain decimal numbers only: no "nan", "inf", hex, underscores or Unicode digits.
# Linear on query text too: every repetition is one character class, and what may follow
# each ('.', 'e', the end) is outside that class, so a failed fullmatch gives back the
# digits of one run one at a time, testing one character each: at most twice the length.
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
_INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)
# int() refuses strings past 4300 digits; beyond that a float is precise enough.
_MAX_INT_DIGITS = 4000


def parse_number(text: str) -> int | float | None:
    """The number ``text`` spells in plain decimal notation, or None."""
    if text.isascii() and text.isdigit() and len(text) <= _MAX_INT_DIGITS:
        return int(text)  # the common case ('404'), without the regular expressions
    if _NUMBER.fullmatch(text) is None:
        return None
    if len(text) <= _MAX_INT_DIGITS and _INTEGER.fullmatch(text) is not None:
        return int(text)
    return float(text)


def finite(number: int | float) -> bool:
    return type(number) is int or math.isfinite(number)


def as_text(value: object) -> str | None:
    """A scalar field value as text (JSON spelling for booleans); None for objects."""
    if type(value) is str:
        return value
    if type(value) is int or type(value) is float:
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):  # subclasses; a tuple beats a union here
        return str(value)
    return None


def as_number(value: object) -> int | float | None:
    """A numeric field value, or a string spelling a number; None otherwise."""
    if type(value) is int or type(value) is float:
        return value
    if type(value) is str:
        return parse_number(value)
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        return parse_number(value)
    return None


def compile_value(node: ValueNode) -> ValuePredicate:
    """A predicate over one (non-None, non-array) field value."""
    if isinstance(node, Match):
        return _compile_match(node)
    if isinstance(node, Compare):
        return _compile_compare(node)
    if isinstance(node, Exists):
        return _always
    if isinstance(node, ValueNot):
        inner = compile_value(node.operand)
        return lambda value: not inner(value)
    if isinstance(node, ValueAnd):
        return _every(tuple(compile_value(operand) for operand in node.operands))
    merged = merge_matches(node)
    if merged is not None:
        return _compile_match(merged)
    return _some(tuple(compile_value(operand) for operand in node.operands))


def _always(value: object) -> bool:
    return True


def _every(parts: tuple[ValuePredicate, ...]) -> ValuePredicate:
    def every(value: object) -> bool:
        for part in parts:
            if not part(value):
                return False
        return True

    return every


def _some(parts: tuple[ValuePredicate, ...]) -> ValuePredicate:
    def some(value: object) -> bool:
        for part in parts:
            if part(value):
                return True
        return False

    return some


def _compile_compare(node: Compare) -> ValuePredicate:
    limit = node.number
    if node.op == ">":
        return lambda value: (n := as_number(value)) is not None and n > limit
    if node.op == ">=":
        return lambda value: (n := as_number(value)) is not None and n >= limit
    if node.op == "<":
        return lambda value: (n := as_number(value)) is not None and n < limit
    return lambda value: (n := as_number(value)) is not None and n <= limit


@dataclass(frozen=True, slots=True)
class AnyMatch:
    """``level:[warn,error]``, ``app:(web OR api)``: matches of one kind, merged so
    that a single ``startswith(tuple)`` or set lookup tests them all."""

    values: tuple[str, ...]
    exact: bool
    case_sensitive: bool


def merge_matches(node: ValueOr) -> AnyMatch | None:
    """The ``AnyMatch`` equivalent to ``node``, if it is an OR of plain matches of one kind."""
    first = node.operands[0]
    if not isinstance(first, Match):
        return None
    values = []
    for operand in node.operands:
        if (
            not isinstance(operand, Match)
            or operand.exact != first.exact
            or operand.case_sensitive != first.case_sensitive
        ):
            return None
        values.append(operand.value)
    return AnyMatch(tuple(values), first.exact, first.case_sensitive)


def compile_text_match(node: Match | AnyMatch) -> Callable[[str], bool]:
    """The test of a match against a value already known to be a string."""
    values = node.values if isinstance(node, AnyMatch) else (node.value,)
    if not node.case_sensitive:
        values = tuple(value.casefold() for value in values)
    if node.exact:
        if len(values) == 1:
            (expected,) = values
            if node.case_sensitive:
                return lambda text: text == expected
            return lambda text: text.casefold() == expected
        choices = frozenset(values)
        if node.case_sensitive:
            return lambda text: text in choices
        return lambda text: text.casefold() in choices
    prefixes = values[0] if len(values) == 1 else values  # startswith takes a tuple too
    if node.case_sensitive:
        return lambda text: text.startswith(prefixes)
    return lambda text: text.casefold().startswith(prefixes)


def _compile_match(node: Match | AnyMatch) -> ValuePredicate:
    on_text = compile_text_match(node)
    # An exact numeric literal compares numerically with numeric values (400 == 400.0).
    values = node.values if isinstance(node, AnyMatch) else (node.value,)
    numbers = (
        frozenset(n for n in map(parse_number, values) if n is not None)
        if node.exact
        else frozenset()
    )

    def matches(value: object) -> bool:
        if type(value) is str:
            return on_text(value)
        if numbers and (type(value) is int or type(value) is float):
            return value in numbers
        text = as_text(value)
        return text is not None and on_text(text)

    return matches

"""Exclusion-rule wildcards (`*` only) are matched without a regular expression: the
answers equal a plain reference on every input, and names that make a backtracking
engine take exponential time (`*a*a*a*a*b`) are answered at once."""

from __future__ import annotations

import re
from functools import cache

from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.property_sizes import examples

from tidegate.logs.exclusion import Wildcards


def reference(names: list[str], value: str) -> bool:
    """The obvious recursive definition of a `*`-only glob over case-folded text."""
    folded = value.casefold()
    return any(_glob(name.casefold(), folded) for name in names)


def _glob(name: str, value: str) -> bool:
    @cache
    def at(i: int, j: int) -> bool:
        if i == len(name):
            return j == len(value)
        if name[i] == "*":
            return at(i + 1, j) or (j < len(value) and at(i, j + 1))
        return j < len(value) and name[i] == value[j] and at(i + 1, j + 1)

    return at(0, 0)


def old_regex(names: list[str], value: str) -> bool:
    """The regex the rules used before (on inputs small enough not to backtrack long)."""
    alternatives = (
        "(?s:" + ".*".join(re.escape(part) for part in name.split("*")) + ")" for name in names
    )
    return re.compile("|".join(alternatives), re.IGNORECASE).fullmatch(value) is not None


# A small alphabet makes overlaps, repeats and near-misses common; the specials of other
# glob dialects (`?`, `[`, `.`) must stay literal.
ALPHABET = st.sampled_from("aAbB*?[.-ß")
names = st.lists(st.text(ALPHABET, min_size=1, max_size=8), min_size=1, max_size=3)
values = st.text(st.sampled_from("aAbB?[.-ßs"), max_size=12)


@settings(max_examples=examples(1500), deadline=None)
@given(names=names, value=values)
@example(names=["*a*a*b"], value="aab")
@example(names=["a*a"], value="a")
@example(names=["*ab*ba*"], value="aba")
@example(names=["**"], value="")
@example(names=["a*b*a"], value="abba")
def test_matches_the_reference(names: list[str], value: str) -> None:
    assert Wildcards(names).matches(value) == reference(names, value)


ASCII = st.sampled_from("aAbB*?[.-")


@settings(max_examples=examples(500), deadline=None)
@given(
    names=st.lists(st.text(ASCII, min_size=1, max_size=6), min_size=1, max_size=3),
    value=st.text(st.sampled_from("aAbB?[.-"), max_size=10),
)
def test_ascii_answers_equal_the_former_regex(names: list[str], value: str) -> None:
    assert Wildcards(names).matches(value) == old_regex(names, value)


def test_adversarial_names_are_answered_in_one_scan() -> None:
    # The former regex took 41 s on the 200-character host; a linear scan is immediate.
    evil = Wildcards(["*a*a*a*a*b", "*a*a*a*a*a*a*a*a*a*a*c"])
    assert not evil.matches("a" * 200)
    assert not evil.matches("a" * 100_000)
    assert evil.matches("a" * 100_000 + "b")
    assert evil.matches("x" + "a" * 5000 + "c")


def test_unicode_case_folding() -> None:
    assert Wildcards(["STRASSE-*"]).matches("straße-1")
    assert Wildcards(["*-ΣΊΣΥΦΟΣ"]).matches("x-σίσυφος")
    assert not Wildcards(["web-?"]).matches("web-1")  # `?` is literal
    assert Wildcards(["web-?"]).matches("WEB-?")

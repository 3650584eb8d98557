"""The work counter of ``complexity``: it sees a quadratic loop, passes a linear one,
and counts the same whatever the ``re`` module's cache holds."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.search.complexity import assert_linear, calls_made

from tidegate.search import LogLine, compile_query

HERE = str(Path(__file__).parent)


def _quadratic(text: str) -> int:
    pairs = 0
    for i in range(len(text)):
        for j in range(i):
            if text[i] == text[j]:
                pairs += 1
    return pairs


def _linear(text: str) -> int:
    seen = 0
    for char in text:
        if char == "a":
            seen += 1
    return seen


def _sized(function: Callable[[str], int]) -> Callable[[int], Callable[[], object]]:
    return lambda n: lambda: function("ab" * (n // 2))


def test_a_quadratic_loop_fails_the_check() -> None:
    with pytest.raises(AssertionError):
        assert_linear(_sized(_quadratic), 200, root=HERE)


def test_a_linear_loop_passes_the_check() -> None:
    assert_linear(_sized(_linear), 2_000, root=HERE)


def test_code_outside_the_root_is_not_counted() -> None:
    assert calls_made(lambda: _linear("a" * 1000), root="/nowhere/") == 0


def test_the_count_does_not_depend_on_the_re_cache() -> None:
    def work() -> object:
        return compile_query('level:error "disk full" -warn').matches(LogLine("disk full now"))

    re.purge()
    cold = calls_made(work)
    warm = calls_made(work)
    re.purge()
    assert calls_made(work) == cold == warm

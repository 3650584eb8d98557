"""Linear-time checks that count work instead of timing it: the Python and C function
calls a piece of code makes (``sys.setprofile``), at one input size and at twice that.
Counts do not depend on the machine's load, so these tests cannot flake."""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any


def calls_made(work: Callable[[], object]) -> int:
    count = 0

    def profile(_frame: FrameType, event: str, _arg: Any) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(profile)
    try:
        work()
    finally:
        sys.setprofile(None)
    return count


def assert_linear(work_of_size: Callable[[int], Callable[[], object]], size: int) -> None:
    """Doubling the input at most (about) doubles the calls."""
    small = calls_made(work_of_size(size))
    large = calls_made(work_of_size(2 * size))
    assert large <= 2.5 * small + 100, (small, large)

"""Linear-time checks that count work instead of timing it: the calls made and the
lines run *in tidegate's own code* (``sys.settrace``), at one input size and at twice
that. Counts do not depend on the machine's load, so these tests cannot flake.

Only frames whose code lives in the ``tidegate`` package are counted: the standard
library and C functions are left out, so work that depends on their caches (``re``
compiles a pattern once and then serves it from its cache, whichever test asked first)
cannot change the count. A quadratic loop in tidegate's code still shows, because every
line it runs is counted."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import tidegate

TIDEGATE_DIR = str(Path(tidegate.__file__).parent) + os.sep


def counts_frame(filename: str, root: str = TIDEGATE_DIR) -> bool:
    return filename.startswith(root)


def calls_made(work: Callable[[], object], *, root: str = TIDEGATE_DIR) -> int:
    """Calls into, and lines run in, code under ``root`` (tidegate's package) while
    ``work`` runs."""
    count = 0
    ours: dict[object, bool] = {}

    def local(_frame: FrameType, event: str, _arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return local

    def trace(frame: FrameType, event: str, _arg: Any) -> Any:
        nonlocal count
        if event != "call":
            return None
        code = frame.f_code
        mine = ours.get(code)
        if mine is None:
            mine = ours[code] = counts_frame(code.co_filename, root)
        if not mine:
            return None  # not ours: neither its lines nor its C calls are counted
        count += 1
        return local

    previous = sys.gettrace()
    sys.settrace(trace)
    try:
        work()
    finally:
        sys.settrace(previous)
    return count


def assert_linear(
    work_of_size: Callable[[int], Callable[[], object]], size: int, *, root: str = TIDEGATE_DIR
) -> None:
    """Doubling the input at most (about) doubles the work done in tidegate's code."""
    small = calls_made(work_of_size(size), root=root)
    large = calls_made(work_of_size(2 * size), root=root)
    assert small > 0, "no work counted: the code under test is not tidegate's"
    assert large <= 2.5 * small + 100, (small, large)

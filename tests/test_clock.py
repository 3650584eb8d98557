"""One wall clock: `tidegate.clock` is the only module that reads epoch milliseconds
from the system; everything else imports it or takes an injected clock."""

from __future__ import annotations

import ast
import time
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

import tidegate
from tidegate.clock import WallClock, epoch_ms_of, now_ms

PACKAGE = Path(tidegate.__file__).parent
CLOCK = PACKAGE / "clock.py"


def test_now_ms_is_the_system_wall_clock_in_milliseconds() -> None:
    before = time.time_ns() // 1_000_000
    read = now_ms()
    after = time.time_ns() // 1_000_000
    assert before <= read <= after
    assert before <= WallClock().now_ms()


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        (datetime(1970, 1, 1, tzinfo=UTC), 0),
        (datetime(2024, 1, 1, tzinfo=UTC), 1_704_067_200_000),
        (datetime(2024, 1, 1, 0, 0, 0, 250_000, tzinfo=UTC), 1_704_067_200_250),
        (datetime(2024, 1, 1, 1, tzinfo=timezone(timedelta(hours=1))), 1_704_067_200_000),
    ],
)
def test_epoch_ms_of_an_aware_datetime(moment: datetime, expected: int) -> None:
    assert epoch_ms_of(moment) == expected


def _wall_clock_reads(tree: ast.AST) -> list[int]:
    """Lines calling ``time.time_ns()``, or multiplying ``time.time()`` into milliseconds."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            target = node.func
            if isinstance(target.value, ast.Name) and target.value.id == "time":
                if target.attr == "time_ns":
                    found.append(node.lineno)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            sides = (node.left, node.right)
            calls_time = any(
                isinstance(side, ast.Call)
                and isinstance(side.func, ast.Attribute)
                and side.func.attr == "time"
                for side in sides
            )
            if calls_time and any(
                isinstance(side, ast.Constant) and side.value == 1000 for side in sides
            ):
                found.append(node.lineno)
    return found


def test_the_checker_finds_a_hand_made_clock() -> None:
    source = "import time\ndef a():\n    return time.time_ns() // 1_000_000\n"
    source += "def b():\n    return int(time.time() * 1000)\n"
    assert _wall_clock_reads(ast.parse(source)) == [3, 5]


def test_no_module_but_the_clock_reads_epoch_milliseconds() -> None:
    offenders = {
        f"{path.relative_to(PACKAGE)}:{line}"
        for path in PACKAGE.rglob("*.py")
        if path != CLOCK
        for line in _wall_clock_reads(ast.parse(path.read_text(encoding="utf-8")))
    }
    assert offenders == set()

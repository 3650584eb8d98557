"""The waiting helpers: they return what the check gave once it holds, and fail naming
what was waited for (a deadline of 0 makes the failure immediate, not a timing)."""

from __future__ import annotations

import pytest
from tests.waiting import eventually, until


async def test_eventually_returns_the_first_true_value_of_a_sync_or_async_check() -> None:
    calls: list[int] = []

    def sync_check() -> int:
        calls.append(1)
        return len(calls) if len(calls) >= 3 else 0

    async def async_check() -> str:
        calls.append(1)
        return "done" if len(calls) >= 5 else ""

    assert await eventually(sync_check, every=0, what="three calls") == 3
    assert await eventually(async_check, every=0, what="five calls") == "done"


async def test_eventually_fails_naming_what_and_the_last_value_seen() -> None:
    with pytest.raises(
        AssertionError, match=r"^the lines arrived: still not so after 0 s \(last seen: \[\]\)$"
    ):
        await eventually(lambda: [], timeout=0, what="the lines arrived")
    seen = ["a"]
    with pytest.raises(AssertionError, match=r"^4 lines, got \['a'\]: still not so after 0 s$"):
        await eventually(lambda: False, timeout=0, what=lambda: f"4 lines, got {seen}")


def test_until_returns_the_first_true_value_and_fails_naming_what() -> None:
    calls: list[int] = []

    def check() -> int:
        calls.append(1)
        return len(calls) if len(calls) >= 3 else 0

    assert until(check, every=0, what="three calls") == 3
    with pytest.raises(AssertionError, match=r"^the server stopped: still not so after 0 s$"):
        until(lambda: None, timeout=0, what="the server stopped")

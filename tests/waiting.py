"""Waiting for something to happen: poll until it holds, or fail after a deadline.

A bounded loop such as ``for _ in range(50): ... sleep(0.05)`` guesses the machine's
speed (2.5 s here) and fails on a loaded one although the product is right. These poll
until a generous deadline (30 s by default; 60-120 s where a server must start or a
retry back-off must pass) read from ``time.monotonic()``: an outcome waited for, never
a time measured. A passing test pays only the time the effect takes.

Not for a check that something does NOT happen over a window: that is a sleep and an
assertion, and a wait would pass at once."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar, overload

T = TypeVar("T")

DEFAULT_TIMEOUT_S = 30.0

#: What is waited for, or a function giving it when the wait fails (it may name
#: what was seen by then).
What = str | Callable[[], str]


def _failure(what: What, timeout: float, seen: object) -> AssertionError:
    text = what() if callable(what) else what
    message = f"{text}: still not so after {timeout:g} s"
    if not isinstance(seen, bool) and seen is not None:
        message += f" (last seen: {seen!r})"
    return AssertionError(message)


@overload
async def eventually(
    check: Callable[[], Awaitable[T | None]],
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    every: float = 0.05,
    what: What,
) -> T: ...


@overload
async def eventually(
    check: Callable[[], T | None],
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    every: float = 0.05,
    what: What,
) -> T: ...


async def eventually(
    check: Callable[[], object],
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    every: float = 0.05,
    what: What,
) -> object:
    """Calls ``check`` (sync or async) every ``every`` seconds until it returns a true
    value, and returns that value; raises AssertionError naming ``what`` (and the last
    value seen) once ``timeout`` seconds have passed."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        seen = await result if inspect.isawaitable(result) else result
        if seen:
            return seen
        if time.monotonic() >= deadline:
            raise _failure(what, timeout, seen)
        await asyncio.sleep(every)


def until(
    check: Callable[[], T | None],
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    every: float = 0.05,
    what: What,
) -> T:
    """``eventually`` for synchronous tests (live servers, the browser): blocks the
    thread between checks, so never call it from a running event loop."""
    deadline = time.monotonic() + timeout
    while True:
        seen = check()
        if seen:
            return seen
        if time.monotonic() >= deadline:
            raise _failure(what, timeout, seen)
        time.sleep(every)

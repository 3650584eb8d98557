"""Bounded shutdown steps: a server that is asked to stop must stop.

Each close step of the app's lifespan (and each task a component stops) gets a time
limit; one that overruns it is logged by name and left behind, and shutdown moves on.
A task is awaited with ``asyncio.wait`` rather than ``wait_for``: ``wait_for`` waits
for the cancelled task to finish, so a task that swallows its cancellation (redis-py's
``get_message`` reports a cancel landing as its own timeout expires as that timeout)
would hold it forever. Foundation layer: imports nothing of tidegate's."""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import Awaitable, Callable
from types import FrameType
from typing import Any

import uvicorn

log = logging.getLogger("tidegate.shutdown")

DEFAULT_STEP_TIMEOUT_S = 10.0


async def close_step(
    name: str, step: Callable[[], Awaitable[Any]], *, timeout_s: float = DEFAULT_STEP_TIMEOUT_S
) -> bool:
    """Run ``step()`` for at most ``timeout_s``; True when it finished (a failure is
    logged, never raised: the next step must still run)."""
    try:
        task = asyncio.ensure_future(step())
    except Exception:
        log.warning("shutdown: %s failed", name, exc_info=True)
        return True
    done, _ = await asyncio.wait({task}, timeout=timeout_s)
    if not done:
        task.cancel()
        log.warning("shutdown: %s did not finish within %g s; moving on", name, timeout_s)
        return False
    if not task.cancelled() and task.exception() is not None:
        log.warning("shutdown: %s failed", name, exc_info=task.exception())
    return True


def close_step_sync(
    name: str, step: Callable[[], Any], *, timeout_s: float = DEFAULT_STEP_TIMEOUT_S
) -> Awaitable[bool]:
    """A blocking step, run in a thread (left running if it overruns)."""
    return close_step(name, lambda: asyncio.to_thread(step), timeout_s=timeout_s)


async def stop_task(
    task: asyncio.Task[Any], name: str, *, timeout_s: float = DEFAULT_STEP_TIMEOUT_S
) -> bool:
    """Cancel ``task`` and wait at most ``timeout_s`` for it to end."""
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=timeout_s)
    if not done:
        log.warning("shutdown: task %s did not stop within %g s; moving on", name, timeout_s)
        return False
    if not task.cancelled() and task.exception() is not None:
        log.warning("shutdown: task %s failed", name, exc_info=task.exception())
    return True


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def on_stop_signal(callback: Callable[[], None]) -> None:
    """Run ``callback`` on this event loop as soon as the process is asked to stop.

    uvicorn takes SIGTERM and SIGINT, stops accepting, and waits for open requests to
    end (up to its graceful timeout) before the app's lifespan may close anything; a
    live-tail stream never ends by itself, so each one held a stop for the whole
    timeout. Chained in front of uvicorn's own handler (which still runs, unchanged),
    the callback lets such requests end at once. Only where uvicorn's handler is the
    one installed (a served process's main thread): an app run in tests or under
    another server leaves signal handling alone."""
    if threading.current_thread() is not threading.main_thread():
        return
    loop = asyncio.get_running_loop()
    for signum in STOP_SIGNALS:
        installed = signal.getsignal(signum)
        if not isinstance(getattr(installed, "__self__", None), uvicorn.Server):
            continue

        def chained(
            received: int, frame: FrameType | None, server_handler: Any = installed
        ) -> None:
            loop.call_soon_threadsafe(callback)
            server_handler(received, frame)

        signal.signal(signum, chained)

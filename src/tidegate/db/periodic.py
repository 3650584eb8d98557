"""A write to the database every few seconds, beside the server: counters that a worker
keeps in memory (pipeline usage, parsing template matches) are added to their tables in
batches rather than once per event."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Awaitable, Callable

from tidegate.db.engine import Database

__all__ = ["PeriodicFlush"]


class PeriodicFlush:
    """Runs ``flush(db)`` every ``interval_s`` seconds, jittered by a fifth either way so
    that the workers of one server do not all write at once, on a task of its own
    (``start``; none when ``interval_s`` is 0), and once more on ``close``. ``flush``
    handles its own failures (a failure past it is not retried)."""

    def __init__(
        self, flush: Callable[[Database], Awaitable[object]], *, interval_s: float, name: str
    ) -> None:
        self.flush = flush
        self.interval_s = interval_s
        self.name = name
        self._task: asyncio.Task[None] | None = None

    def start(self, db: Database) -> None:
        if self._task is None and self.interval_s > 0:
            self._task = asyncio.create_task(self._run(db), name=self.name)

    async def close(self, db: Database) -> None:
        """Stop the timer, then flush what is left."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        with contextlib.suppress(Exception):
            await self.flush(db)

    async def _run(self, db: Database) -> None:
        while True:
            await asyncio.sleep(self.interval_s * random.uniform(0.8, 1.2))
            await self.flush(db)

"""Browser sessions' last activity, recorded beside the requests rather than in them.

A signed-in browser's read (an export page, an aggregation) records the session's
activity at most once a minute, for the idle timeout. That is a write: on SQLite it
takes the write lock (BEGIN IMMEDIATE), and while a bulk ingest or the alert evaluator
held the lock the read waited for it, then answered 503 ``database is locked``
(issue 21, finding 6). Reads never take the write lock (docs/fair-reads.md): the
request hands the touch to this recorder and goes on; one task of the process writes
the touches waiting (coalesced per session) in one short transaction, and a touch that
could not be written is tried again by the session's next request (its recorded
activity is still over a minute old). The idle timeout is hours; a touch landing
seconds late changes nothing. Sessions found expired are deleted the same way (the
request answers 401 by the clock, whatever the row).
"""

from __future__ import annotations

import asyncio
import logging
from typing import cast

from sqlalchemy import Table, bindparam, delete, update

from tidegate.db.engine import Database
from tidegate.models import UserSession

log = logging.getLogger(__name__)

_sessions = cast(Table, UserSession.__table__)
_TOUCH = (
    update(_sessions)
    .where(_sessions.c.id == bindparam("session_id"))
    .values(last_seen_ms=bindparam("seen_ms"))
)


class SessionActivity:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._touched: dict[str, int] = {}
        self._ended: set[str] = set()
        self._task: asyncio.Task[None] | None = None

    def touch(self, session_id: str, now_ms: int) -> None:
        self._touched[session_id] = max(now_ms, self._touched.get(session_id, 0))
        self._start()

    def end(self, session_id: str) -> None:
        self._ended.add(session_id)
        self._touched.pop(session_id, None)
        self._start()

    def _start(self) -> None:
        task = self._task
        # One writer at a time (of this loop: a task of a closed loop never finishes).
        if task is None or task.done() or task.get_loop() is not asyncio.get_running_loop():
            self._task = asyncio.create_task(self._write(), name="tidegate-session-activity")

    async def _write(self) -> None:
        while self._touched or self._ended:
            touched, self._touched = self._touched, {}
            ended, self._ended = self._ended, set()
            try:
                async with self._db.write_sessions() as session:
                    if touched:
                        await session.execute(
                            _TOUCH,
                            [{"session_id": key, "seen_ms": ms} for key, ms in touched.items()],
                        )
                    if ended:
                        await session.execute(delete(UserSession).where(UserSession.id.in_(ended)))
                    await session.commit()
            except Exception:  # the next request of each session asks again
                log.warning("could not record sessions' activity", exc_info=True)
                return

    async def flush(self) -> None:
        """Waits for the touches handed over so far to be written (or given up)."""
        while (
            self._task is not None
            and not self._task.done()
            and self._task.get_loop() is asyncio.get_running_loop()
        ):
            await asyncio.shield(self._task)

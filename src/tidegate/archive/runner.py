"""The archive runner: a task of each worker process. Every ``archive_tick_s`` it makes
the previous UTC day pending for every account with archiving (once the day has been
over for ``archive_delay_s``), then writes the days that are due.

Once across workers and hosts: a day is written by the worker that holds its lease in
the database (``archive_days.lease_*``, taken by a conditional update as the alert
evaluator takes its cursor's), renewed after every part; another worker finds it
leased, or done. A day is ``done`` only after its upload completed. A failed attempt is
logged, recorded with its reason in the day's status (``GET
/v1/config/archiving/status``) and retried after a backoff that doubles
(``archive_backoff_s`` up to ``archive_backoff_max_s``); after ``archive_attempts``
the day is ``failed`` (still shown; ``POST /v1/config/archiving/run`` tries it again).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from functools import partial
from typing import Final

import httpcore
import httpx

from tidegate import metrics
from tidegate.archive import repository
from tidegate.archive.service import open_config
from tidegate.archive.targets import (
    ArchiveUnavailable,
    describe_failure,
    open_upload,
    part_bytes_for,
)
from tidegate.archive.writer import CHUNK_LINES, day_name, object_key, write_day
from tidegate.auth.secrets import Sealer
from tidegate.clock import now_ms
from tidegate.config import Settings
from tidegate.db.engine import Database
from tidegate.kit.destination_guard import (
    DestinationRefused,
    GuardedTransport,
    policy_from_setting,
)
from tidegate.logs.store import DAY_MS
from tidegate.objectstore.http import StoreFailed
from tidegate.shutdown import close_step, stop_task

__all__ = ["ArchiveRunner"]

log = logging.getLogger("tidegate.archive")

LEASE_MS: Final = 10 * 60 * 1000
DAYS_PER_ROUND: Final = 8
_FAILURES = (
    StoreFailed,
    ArchiveUnavailable,
    DestinationRefused,
    httpx.HTTPError,
    httpcore.ConnectError,
)


class ArchiveRunner:
    def __init__(
        self,
        db: Database,
        sealer: Sealer,
        settings: Settings,
        *,
        clock: Callable[[], int] = now_ms,
        chunk_lines: int = CHUNK_LINES,
        part_bytes: int | None = None,
    ) -> None:
        self.db = db
        self.sealer = sealer
        self.settings = settings
        self.clock = clock
        self.owner = uuid.uuid4().hex
        self.chunk_lines = chunk_lines
        self.part_bytes = part_bytes  # None: the integration's (``part_bytes_for``)
        # Every connection through the destination guard: an archive endpoint is the
        # tenant's choice, as a destination's is.
        self.client = httpx.AsyncClient(
            transport=GuardedTransport(
                policy_from_setting(settings.destination_allow),
                limits=httpx.Limits(max_connections=16, max_keepalive_connections=4),
            ),
            trust_env=False,
            follow_redirects=False,
            headers={"User-Agent": "tidegate-archive"},
        )
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="tidegate-archive")

    async def close(self) -> None:
        bound = self.settings.shutdown_step_timeout_s
        if self._task is not None:
            await stop_task(self._task, "archive rounds", timeout_s=bound)
            self._task = None
        await close_step("archive HTTP client", self.client.aclose, timeout_s=bound)

    async def _run(self) -> None:
        while True:
            try:
                await self.round()
            except asyncio.CancelledError:
                raise
            except Exception:  # the database may be down for a while: next tick
                log.warning("archive round failed", exc_info=True)
            await asyncio.sleep(self.settings.archive_tick_s)

    async def round(self) -> int:
        """Schedule yesterday, then write what is due; how many days were written."""
        await self.schedule()
        async with self.db.read_sessions() as session:
            due = await repository.due_days(
                session=session, now_ms=self.clock(), limit=DAYS_PER_ROUND
            )
        written = 0
        for account_id, day in due:
            written += await self.write(account_id, day)
        return written

    async def schedule(self) -> None:
        now = self.clock()
        day = (now - int(self.settings.archive_delay_s * 1000)) // DAY_MS - 1
        async with self.db.read_sessions() as session:
            accounts = await repository.accounts_without_day(session=session, day=day)
        for account_id in accounts:
            async with self.db.write_sessions() as session:
                await repository.ensure_day(
                    session=session, account_id=account_id, day=day, due_ms=now, now_ms=now
                )
                await session.commit()

    async def write(self, account_id: str, day: int) -> int:
        """One attempt at the day, if this worker wins its lease; 1 when written."""
        now = self.clock()
        async with self.db.write_sessions() as session:
            claimed = await repository.claim(
                session=session,
                account_id=account_id,
                day=day,
                owner=self.owner,
                now_ms=now,
                lease_ms=LEASE_MS,
            )
            row = await repository.get_config(session=session, account_id=account_id)
            attempts = await repository.attempts_of(session=session, account_id=account_id, day=day)
            await session.commit()
        if not claimed:
            return 0
        try:
            if row is None:
                raise ArchiveUnavailable("archiving is no longer configured for this account")
            config = open_config(row, self.sealer)
            upload = await open_upload(
                config,
                object_key(account_id, day),
                settings=self.settings,
                client=self.client,
            )
            written = await write_day(
                db=self.db,
                upload=upload,
                account_id=account_id,
                day=day,
                chunk_lines=self.chunk_lines,
                part_bytes=self.part_bytes or part_bytes_for(config),
                on_part=partial(self._renew, account_id, day),
            )
        except _FAILURES as error:
            await self._failed(account_id, day, attempts, describe_failure(error))
            return 0
        except Exception as error:  # a bug must not leave the day silently pending
            log.exception("archive: account %s, %s: unexpected failure", account_id, day)
            await self._failed(account_id, day, attempts, describe_failure(error))
            return 0
        await self._finish(
            account_id,
            day,
            status="done",
            error=None,
            object_key=written.key,
            lines=written.lines,
            bytes=written.bytes,
            completed_ms=self.clock(),
        )
        metrics.ARCHIVE_ATTEMPTS.labels("written").inc()
        metrics.ARCHIVE_LINES.inc(written.lines)
        metrics.ARCHIVE_BYTES.inc(written.bytes)
        log.info(
            "archive: account %s, %s: %d lines, %d bytes to %s",
            account_id,
            day_name(day),
            written.lines,
            written.bytes,
            written.key or "(no object: no lines)",
        )
        return 1

    async def _renew(self, account_id: str, day: int) -> None:
        async with self.db.write_sessions() as session:
            await repository.renew(
                session=session,
                account_id=account_id,
                day=day,
                owner=self.owner,
                until_ms=self.clock() + LEASE_MS,
            )
            await session.commit()

    async def _finish(self, account_id: str, day: int, **values: object) -> None:
        """The attempt's outcome recorded, the lease given back."""
        async with self.db.write_sessions() as session:
            await repository.finish(
                session=session,
                account_id=account_id,
                day=day,
                owner=self.owner,
                updated_ms=self.clock(),
                **values,
            )
            await session.commit()

    async def _failed(self, account_id: str, day: int, attempts: int, reason: str) -> None:
        settings = self.settings
        final = attempts >= settings.archive_attempts
        delay_s = min(
            settings.archive_backoff_max_s, settings.archive_backoff_s * 2 ** (attempts - 1)
        )
        metrics.ARCHIVE_ATTEMPTS.labels("failed" if final else "retried").inc()
        await self._finish(
            account_id,
            day,
            status="failed" if final else "retrying",
            error=reason[:2000],
            next_attempt_ms=self.clock() + int(delay_s * 1000),
        )
        log.warning(
            "archive: account %s, %s: attempt %d failed%s: %s",
            account_id,
            day_name(day),
            attempts,
            "; giving up (POST /v1/config/archiving/run retries)" if final else "; will retry",
            reason,
        )

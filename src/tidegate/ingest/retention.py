"""Retention: delete each account's lines received more than ``retention`` days ago.

**Decision:** age counts from when tidegate received a line, not from the line's own
``timestamp``: a backfill of old lines is kept for the account's retention like any
other data, instead of vanishing at the next sweep.

One job per worker process. Deletes go in batches, each its own short transaction, so
the SQLite write lock is never held for long and ingestion goes on between batches;
two workers (or hosts) sweeping at once only find less to delete. ``retention`` 0 means
no limit: lines are kept until the account is deleted. Usage rows are history and are
never deleted by retention.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Sequence

from tidegate.db.engine import Database
from tidegate.ingest import repository

log = logging.getLogger("tidegate.retention")

DAY_MS = 86_400_000
BATCH = 5_000


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


async def sweep(
    *, db: Database, now_ms: int, batch: int = BATCH, account_ids: Sequence[str] | None = None
) -> int:
    """One pass over every account with a retention limit (or those of ``account_ids``);
    how many lines went."""
    async with db.read_sessions() as session:
        policies = await repository.retention_policies(session=session, account_ids=account_ids)
    deleted = 0
    for account_id, days in policies:
        before_ms = now_ms - days * DAY_MS
        while True:
            async with db.write_sessions() as session:
                count = await repository.delete_received_before(
                    session=session, account_id=account_id, before_ms=before_ms, batch=batch
                )
                await session.commit()
            deleted += count
            if count < batch:
                break
            await asyncio.sleep(0)  # let requests in between batches
    return deleted


async def run_retention(
    *,
    db: Database,
    interval_s: float,
    clock: Callable[[], int] = _now_ms,
    first_delay_s: float | None = None,
) -> None:
    # Workers started together would sweep in lockstep; a random first delay spreads them.
    if first_delay_s is None:
        first_delay_s = random.uniform(1.0, max(1.0, min(interval_s, 30.0)))
    await asyncio.sleep(first_delay_s)
    while True:
        try:
            deleted = await sweep(db=db, now_ms=clock())
            if deleted:
                log.info("retention: deleted %d lines", deleted)
        except Exception:  # the next sweep retries; a failing sweep must not end the job
            log.exception("retention sweep failed")
        await asyncio.sleep(interval_s)

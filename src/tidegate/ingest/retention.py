"""Retention: delete each account's lines received more than ``retention`` days ago.

**Decision:** age counts from when tidegate received a line, not from the line's own
``timestamp``: a backfill of old lines is kept for the account's retention like any
other data, instead of vanishing at the next sweep.

One job per worker process. Deletes go in batches, each its own short transaction, so
the SQLite write lock is never held for long and ingestion goes on between batches;
two workers (or hosts) sweeping at once only find less to delete. ``retention`` 0 means
no limit: lines are kept until the account is deleted. Usage rows are history and are
never deleted by retention.

On PostgreSQL lines are partitioned by the day they were received: a day whose every
line is past its account's retention goes as a whole partition (``DROP TABLE``, no
row-by-row delete, no bloat to vacuum) before the per-account deletes handle the rest.

Segments (docs/log-store.md, "Segments") go whole: a segment whose youngest line is past
the account's retention loses its registry row (a transaction), then its file; a crash in
between leaves a file no row names, which the compactor's next round removes. A segment
straddling the edge stays until wholly past (and ``SEGMENT_GRACE_MS`` more); reads
leave out its lines past retention.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable, Sequence

import httpx
from sqlalchemy import delete
from sqlalchemy.exc import DBAPIError

from tidegate.clock import now_ms
from tidegate.db.engine import Database
from tidegate.ingest import repository
from tidegate.logs.store import DAY_MS, forget_partition
from tidegate.models import LogSegment
from tidegate.objectstore.s3 import S3Failed

log = logging.getLogger("tidegate.retention")

BATCH = 5_000
# A segment goes this long after its youngest line passed retention (reads leave its
# lines out from then on): a read listing the segments from a snapshot taken before the
# drop never finds its file gone, as no read lasts this long (read budgets).
SEGMENT_GRACE_MS = 3_600_000


async def sweep(
    *, db: Database, now_ms: int, batch: int = BATCH, account_ids: Sequence[str] | None = None
) -> int:
    """One pass over every account with a retention limit (or those of ``account_ids``);
    how many lines went."""
    deleted = 0
    if account_ids is None and db.url.startswith("postgresql"):
        deleted += await drop_expired_partitions(db=db, now_ms=now_ms)
    async with db.read_sessions() as session:
        policies = await repository.retention_policies(session=session, account_ids=account_ids)
    for account_id, days in policies:
        before_ms = now_ms - days * DAY_MS
        deleted += await drop_expired_segments(
            db=db, account_id=account_id, before_ms=before_ms - SEGMENT_GRACE_MS
        )
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


async def drop_expired_segments(*, db: Database, account_id: str, before_ms: int) -> int:
    """Drops the account's segments whose every line was received before ``before_ms``:
    the registry rows in one transaction, then the files (and with a segment bucket,
    the objects and this host's copies); how many lines went. A crash or a failed
    delete in between leaves files and objects no row names, which the compactor's
    orphan sweep removes; a registered segment's object is never deleted first."""
    async with db.write_sessions() as session:
        expired = (
            await session.execute(
                delete(LogSegment)
                .where(LogSegment.account_id == account_id, LogSegment.max_received_ms < before_ms)
                .returning(LogSegment.path, LogSegment.lines)
            )
        ).all()
        await session.commit()
    root = db.segment_dir
    for path, _ in expired:
        log.info("retention: dropped segment %s", path)
        if root is not None:  # else the compactor's round removes the file (unnamed)
            with contextlib.suppress(FileNotFoundError):
                await asyncio.to_thread((root / path).unlink)
        if db.segment_cache is not None:
            await asyncio.to_thread(db.segment_cache.discard, path)
        if db.segment_objects is not None:
            try:
                await db.segment_objects.delete(path)
            except (S3Failed, httpx.HTTPError) as error:
                log.warning("retention: segment object %s stays for now (%s)", path, error)
    return sum(int(lines) for _, lines in expired)


async def drop_expired_partitions(*, db: Database, now_ms: int) -> int:
    """PostgreSQL: drop each day's partition whose accounts all keep lines for less time
    than its youngest line's age (a deleted account keeps nothing, 0 keeps forever);
    how many lines went."""
    async with db.read_sessions() as session:
        days = await repository.partitions(session=session)
    deleted = 0
    for day, name in sorted(days.items()):
        # Whole days only: the youngest line of the day is this many days old.
        age_days = (now_ms - (day + 1) * DAY_MS) // DAY_MS
        if age_days < 1:
            break
        async with db.read_sessions() as session:
            retentions = await repository.partition_retentions(session=session, name=name)
        if all(days is None or 0 < days <= age_days for days in retentions):
            try:
                async with db.write_sessions() as session:
                    deleted += await repository.drop_partition(session=session, name=name)
                    await session.commit()
                forget_partition(db.write_engine, day)
            except DBAPIError:
                log.warning("retention: could not drop %s now; the next sweep retries", name)
                continue
            log.info("retention: dropped partition %s", name)
    return deleted


async def run_retention(
    *,
    db: Database,
    interval_s: float,
    clock: Callable[[], int] = now_ms,
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

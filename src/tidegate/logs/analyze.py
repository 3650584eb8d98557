"""PostgreSQL: the planner's statistics of the line partitions, kept current by tidegate.

PostgreSQL plans a search from each partition's statistics, which only ``ANALYZE``
makes. Autovacuum would run it, but it may be off (it is on this project's machine) or
late, and a day's partition grows from empty to its full size within the day: never
analyzed, the planner guesses, and a rare word's aggregation walked every line in time
order (3.18 s at 1,000,000 lines, 0.088 s analyzed; docs/log-store.md).

So the line writer (``tidegate.logs.writer``) tells the ``PartitionAnalyzer`` how many
rows it committed to each day's partition, and past a threshold like autovacuum's
(``floor`` rows plus ``fraction`` of the rows the partition held when it was last
analyzed) the analyzer runs ``ANALYZE`` on that partition:

- off the write path: after the commit, in a task of its own, in a short transaction
  of its own on a connection of the write pool (no connection beyond the pool plan),
  one partition at a time per process; at most ``MAX_DUE`` partitions wait;
- with several workers and hosts, without a storm: an advisory lock per partition
  (``pg_try_advisory_xact_lock``: one process analyzes, the others skip), and a
  partition that another process analyzed since this one last looked (its
  ``analyze_count`` moved) is not analyzed again;
- never failing a write: an error (the partition dropped by retention meanwhile, its
  lock not granted within ``lock_timeout_s``, the statement timeout) is logged, and the
  partition is tried again once another threshold's worth of rows has come.

Each process counts only its own rows, so with N processes writing alike a partition is
analyzed after about N times the threshold: still a bounded fraction of its size.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from tidegate.db.engine import Database
from tidegate.logs.store import partition_name

log = logging.getLogger(__name__)

# Like autovacuum's analyze_threshold and analyze_scale_factor (50 and 0.1), with a
# larger floor: a partition's first lines are analyzed once there are enough to tell
# common values from rare ones.
ANALYZE_FLOOR = 1_000
ANALYZE_FRACTION = 0.1
MAX_DUE = 16
# How long ANALYZE waits for its lock (retention's DROP TABLE holds a stronger one).
LOCK_TIMEOUT_S = 2.0
# The advisory lock's first key (the second is the partition's day); other locks of the
# store use single keys (``ensure_partition``: 7235402), a separate space.
_LOCK_CLASS = 7235403
# Days remembered: today's and tomorrow's partitions are the ones written; older days
# are forgotten first.
_MAX_DAYS = 64

_STATE = text(
    "SELECT c.reltuples, pg_stat_get_analyze_count(c.oid) FROM pg_class c "
    "WHERE c.oid = to_regclass(:name)"
)


@dataclass(slots=True)
class _Partition:
    added: int = 0  # rows this process committed to it since it last looked
    rows: float = 0.0  # its rows at its last analyze, as last read (reltuples)
    analyze_count: int | None = None  # the server's count of its analyzes, as last read


class PartitionAnalyzer:
    """Analyzes the partitions this process fills, past a threshold of rows added."""

    def __init__(
        self,
        db: Database,
        *,
        floor: int = ANALYZE_FLOOR,
        fraction: float = ANALYZE_FRACTION,
        lock_timeout_s: float = LOCK_TIMEOUT_S,
    ) -> None:
        self._db = db
        self.floor = max(1, floor)
        self.fraction = max(0.0, fraction)
        self.lock_timeout_s = lock_timeout_s
        self._partitions: dict[int, _Partition] = {}
        self._due: dict[int, None] = {}  # days, oldest first (an ordered set)
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        # Partitions analyzed, left alone (another process had them) and failed: for
        # tests and logs.
        self.analyzed = 0
        self.skipped = 0
        self.failed = 0

    def threshold(self, rows: float) -> float:
        return self.floor + self.fraction * rows

    def added(self, rows_by_day: Mapping[int, int]) -> None:
        """Rows just committed, by day of their partition. Call after the commit: the
        analysis runs later, in the analyzer's task."""
        if self._closing:
            return
        for day, rows in rows_by_day.items():
            state = self._partitions.get(day)
            if state is None:
                if len(self._partitions) >= _MAX_DAYS:
                    del self._partitions[min(self._partitions)]
                state = self._partitions[day] = _Partition()
            state.added += rows
            if (
                state.added >= self.threshold(state.rows)
                and day not in self._due
                and len(self._due) < MAX_DUE
            ):
                self._due[day] = None
        if self._due and self._task is None:
            self._task = asyncio.create_task(self._run(), name="tidegate-partition-analyzer")

    async def settle(self) -> None:
        """Return once no partition is due (for tests and shutdown)."""
        while self._task is not None:
            await asyncio.shield(self._task)

    async def close(self) -> None:
        """Stop: an analysis under way is abandoned (the next process will redo it)."""
        self._closing = True
        self._due.clear()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        try:
            while self._due and not self._closing:
                day = next(iter(self._due))
                try:
                    async with self._db.write_engine.begin() as connection:
                        await self._analyze(connection, day)
                except Exception as error:
                    self.failed += 1
                    # Counted afresh: retried after another threshold's worth of rows,
                    # so an ANALYZE that keeps failing (past the statement timeout)
                    # does not run again on every commit.
                    state = self._partitions.get(day)
                    if state is not None:
                        state.added = 0
                    log.warning(
                        "could not analyze partition %s (%s: %s); retried after "
                        "another %d rows or more",
                        partition_name(day),
                        type(error).__name__,
                        error,
                        self.floor,
                    )
                finally:
                    self._due.pop(day, None)
        finally:
            self._task = None

    async def _analyze(self, connection: AsyncConnection, day: int) -> None:
        """In a transaction of its own (ANALYZE may run in one; VACUUM may not), so the
        lock and the settings end with it and the pooled connection goes back clean."""
        state = self._partitions.get(day)
        if state is None:  # forgotten meanwhile
            return
        counted = state.added
        name = partition_name(day)
        await connection.execute(
            text("SELECT set_config('lock_timeout', :timeout, true)"),
            {"timeout": f"{max(1, int(self.lock_timeout_s * 1000))}ms"},
        )
        locked = await connection.scalar(
            text("SELECT pg_try_advisory_xact_lock(:space, :day)"),
            {"space": _LOCK_CLASS, "day": day},
        )
        if not locked:
            # Another process is analyzing it now, rows of this one included.
            state.added -= counted
            self.skipped += 1
            return
        found = (await connection.execute(_STATE, {"name": name})).first()
        if found is None:
            # Dropped by retention: nothing to analyze.
            state.added -= counted
            self.skipped += 1
            return
        rows, analyze_count = max(0.0, float(found[0])), int(found[1])
        seen = state.analyze_count
        state.rows, state.analyze_count = rows, analyze_count
        if (seen is not None and analyze_count != seen) or counted < self.threshold(rows):
            # Analyzed by another process since this one last looked, or (first look
            # since this process started) not as stale as it seemed.
            state.added -= counted
            self.skipped += 1
            return
        await connection.execute(text(f'ANALYZE "{name}"'))
        # The statistics counters read above are cached for the transaction: read anew.
        await connection.execute(text("SELECT pg_stat_clear_snapshot()"))
        after = (await connection.execute(_STATE, {"name": name})).first()
        if after is not None:
            state.rows, state.analyze_count = max(0.0, float(after[0])), int(after[1])
        state.added -= counted
        self.analyzed += 1

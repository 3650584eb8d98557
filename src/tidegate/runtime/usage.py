"""Pipeline usage: events and bytes into and out of each component, per minute.

Each worker counts in memory as batches run (a few dict updates per node and batch) and
adds its counts to ``pipeline_usage`` every ``flush_s`` seconds, one upsert per row
(``value = value + excluded.value``), so workers and hosts sum up without coordination.
Bytes are the request body's size shared evenly over its events: an estimate that
costs nothing per event (serialising each event at each node would cost more than
most processors).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection, Iterable, Mapping
from typing import Any, Final

from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from tidegate.db.engine import Database
from tidegate.db.periodic import PeriodicFlush
from tidegate.models import PipelineUsage
from tidegate.models.pipeline_usage import BUCKET_MS
from tidegate.runtime.compiler import NodeOutput, RunningNode

log = logging.getLogger("tidegate.runtime")

__all__ = ["UsageCounter"]

MAX_ROWS: Final = 50_000  # rows held between flushes (more only while flushes fail)

_Key = tuple[str, str, str, int]  # account, pipeline, component, bucket start


class UsageCounter:
    def __init__(self, *, flush_s: float) -> None:
        self.flush_s = flush_s
        self._counts: dict[_Key, list[int]] = {}
        self.lost = 0  # counts not kept because MAX_ROWS rows were waiting for a flush
        self._timer = PeriodicFlush(self.flush, interval_s=flush_s, name="pipeline usage flush")
        self._lock = asyncio.Lock()

    def __len__(self) -> int:
        return len(self._counts)

    def count(
        self,
        *,
        account_id: str,
        pipeline_id: str,
        nodes: Iterable[RunningNode],
        outputs: Mapping[str, NodeOutput],
        taken: Collection[tuple[str, str | None]],
        batch: int,
        body_bytes: int,
        now_ms: int,
    ) -> None:
        """One batch of ``batch`` events (``body_bytes`` in all) through a pipeline."""
        if batch <= 0:
            return
        per_event = body_bytes / batch
        bucket = now_ms - now_ms % BUCKET_MS
        # Egress: what leaves by the outputs other nodes take (``taken``: a throttle's
        # unwired ``dropped`` output, or a loose main output, sends nothing anywhere).
        for node in nodes:
            output = outputs.get(node.id)
            if output is None:
                continue
            if node.kind == "destination":
                received = sent = output.received
            else:
                received = len(output.main) if node.kind == "source" else output.received
                sent = len(output.main) if (node.id, None) in taken else 0
                sent += sum(
                    len(events) for name, events in output.named.items() if (node.id, name) in taken
                )
            if not received and not sent:
                continue
            row = self._counts.get((account_id, pipeline_id, node.id, bucket))
            if row is None:
                if len(self._counts) >= MAX_ROWS:  # flushes failing for long: bounded
                    self.lost += 1
                    continue
                row = self._counts[(account_id, pipeline_id, node.id, bucket)] = [0, 0, 0, 0]
            row[0] += received
            row[1] += round(received * per_event)
            row[2] += sent
            row[3] += round(sent * per_event)

    async def flush(self, db: Database) -> int:
        """Add the counts so far to the database; answers the rows written. Counts that
        cannot be written (database down) are kept for the next flush, up to MAX_ROWS."""
        async with self._lock:
            counts, self._counts = self._counts, {}
            if not counts:
                return 0
            rows = [
                {
                    "account_id": account_id,
                    "pipeline_id": pipeline_id,
                    "component_id": component_id,
                    "bucket_ms": bucket,
                    "ingress_events": values[0],
                    "ingress_bytes": values[1],
                    "egress_events": values[2],
                    "egress_bytes": values[3],
                }
                for (account_id, pipeline_id, component_id, bucket), values in counts.items()
            ]
            try:
                async with db.write_sessions() as session, session.begin():
                    for row in rows:
                        await session.execute(_upsert(db, row))
            except Exception as error:  # keep the counts; the next flush retries
                log.warning("pipeline usage not flushed (%d rows kept): %s", len(rows), error)
                for key, values in counts.items():
                    if len(self._counts) >= MAX_ROWS:
                        break
                    row_now = self._counts.setdefault(key, [0, 0, 0, 0])
                    for index, value in enumerate(values):
                        row_now[index] += value
                return 0
            return len(rows)

    def start(self, db: Database) -> None:
        self._timer.start(db)

    async def close(self, db: Database) -> None:
        await self._timer.close(db)


_COUNTERS: Final = ("ingress_events", "ingress_bytes", "egress_events", "egress_bytes")


def _upsert(db: Database, row: dict[str, Any]) -> Any:
    table = PipelineUsage.__table__
    dialect_insert: Any = sqlite_insert if db.url.startswith("sqlite") else pg_insert
    statement = dialect_insert(table).values(**row)
    return statement.on_conflict_do_update(
        index_elements=["pipeline_id", "component_id", "bucket_ms"],
        set_={name: getattr(table.c, name) + statement.excluded[name] for name in _COUNTERS},
    )

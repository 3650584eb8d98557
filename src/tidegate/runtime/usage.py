"""Pipeline usage: events and bytes into and out of each component, per minute.

Each worker counts in memory as batches run (a few dict updates per node and batch) and
adds its counts to ``pipeline_usage`` (and what each named output sent, a route's arms,
to ``pipeline_output_usage``) every ``flush_s`` seconds, one upsert per row
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
from tidegate.models import PipelineOutputUsage, PipelineUsage
from tidegate.models.pipeline_usage import BUCKET_MS
from tidegate.runtime.compiler import NodeOutput, RunningNode

log = logging.getLogger("tidegate.runtime")

__all__ = ["UsageCounter"]

MAX_ROWS: Final = 50_000  # rows held between flushes (more only while flushes fail)

_Key = tuple[str, str, str, int]  # account, pipeline, component, bucket start
_OutputKey = tuple[str, str, str, str, int]  # account, pipeline, component, output, bucket


class UsageCounter:
    def __init__(self, *, flush_s: float) -> None:
        self.flush_s = flush_s
        self._counts: dict[_Key, list[int]] = {}
        # Events and bytes by named output (a route's arms: what alerts on an arm count).
        self._outputs: dict[_OutputKey, list[int]] = {}
        self.lost = 0  # counts not kept because MAX_ROWS rows were waiting for a flush
        self._timer = PeriodicFlush(self.flush, interval_s=flush_s, name="pipeline usage flush")
        self._lock = asyncio.Lock()

    def __len__(self) -> int:
        return len(self._counts) + len(self._outputs)

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
            for name, events in output.named.items():
                if events:
                    self._add(
                        self._outputs, (account_id, pipeline_id, node.id, name, bucket),
                        (len(events), round(len(events) * per_event)),
                    )  # fmt: skip
            if not received and not sent:
                continue
            self._add(
                self._counts,
                (account_id, pipeline_id, node.id, bucket),
                (received, round(received * per_event), sent, round(sent * per_event)),
            )

    def _add(self, counts: dict[Any, list[int]], key: Any, values: tuple[int, ...]) -> None:
        row = counts.get(key)
        if row is None:
            if len(self) >= MAX_ROWS:  # flushes failing for long: bounded
                self.lost += 1
                return
            row = counts[key] = [0] * len(values)
        for index, value in enumerate(values):
            row[index] += value

    async def flush(self, db: Database) -> int:
        """Add the counts so far to the database; answers the rows written. Counts that
        cannot be written (database down) are kept for the next flush, up to MAX_ROWS."""
        async with self._lock:
            counts, self._counts = self._counts, {}
            outputs, self._outputs = self._outputs, {}
            if not counts and not outputs:
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
            output_rows = [
                {
                    "account_id": account_id,
                    "pipeline_id": pipeline_id,
                    "component_id": component_id,
                    "output": name,
                    "bucket_ms": bucket,
                    "events": values[0],
                    "bytes": values[1],
                }
                for (account_id, pipeline_id, component_id, name, bucket), values in outputs.items()
            ]
            try:
                async with db.write_sessions() as session, session.begin():
                    for row in rows:
                        await session.execute(add_usage(db, row))
                    for row in output_rows:
                        await session.execute(_upsert_output(db, row))
            except Exception as error:  # keep the counts; the next flush retries
                log.warning(
                    "pipeline usage not flushed (%d rows kept): %s",
                    len(rows) + len(output_rows),
                    error,
                )
                for kept, now in ((counts, self._counts), (outputs, self._outputs)):
                    for key, values in kept.items():
                        self._add(now, key, tuple(values))
                return 0
            return len(rows) + len(output_rows)

    def start(self, db: Database) -> None:
        self._timer.start(db)

    async def close(self, db: Database) -> None:
        await self._timer.close(db)


_COUNTERS: Final = ("ingress_events", "ingress_bytes", "egress_events", "egress_bytes")


def _adding(
    db: Database, table: Any, row: dict[str, Any], keys: list[str], counters: Iterable[str]
) -> Any:
    """Insert ``row``, or add its ``counters`` to the row of the same ``keys``."""
    dialect_insert: Any = sqlite_insert if db.url.startswith("sqlite") else pg_insert
    statement = dialect_insert(table).values(**row)
    return statement.on_conflict_do_update(
        index_elements=keys,
        set_={name: getattr(table.c, name) + statement.excluded[name] for name in counters},
    )


def add_usage(db: Database, row: dict[str, Any]) -> Any:
    """A component's counts for a minute (``row``: the keys and ``_COUNTERS``) added to
    what that minute holds, as every flush of every worker adds them."""
    keys = ["pipeline_id", "component_id", "bucket_ms"]
    return _adding(db, PipelineUsage.__table__, row, keys, _COUNTERS)


def _upsert_output(db: Database, row: dict[str, Any]) -> Any:
    keys = ["pipeline_id", "component_id", "output", "bucket_ms"]
    return _adding(db, PipelineOutputUsage.__table__, row, keys, ("events", "bytes"))

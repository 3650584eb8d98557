"""How many lines each parsing template parsed, and when it last did, kept cheaply.

No write per line or per batch: each worker adds a committed batch's matches
(``logs.intake.LineIntake.commit``, on the event loop) to a dict in memory, and every
``flush_s`` seconds (jittered) adds them to ``parsing_templates.match_count`` in one
transaction, one ``UPDATE ... SET match_count = match_count + :n`` per template, so
workers and hosts sum up without coordination. ``last_matched_ms`` only moves forward
(the later of the stored time and this worker's). ``updated_at`` is left as it is: the
counts are not a change of the template, and the rule caches' fingerprint
(``logs.repository``) must not move with them.

What it costs when a flush cannot be written (database down): the counts are kept for
the next one, at most ``MAX_TEMPLATES`` templates' worth. A worker that dies without
closing loses up to ``flush_s`` seconds of counts; a clean stop flushes them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any, Final

from sqlalchemy import bindparam, case, update

from tidegate.db.engine import Database
from tidegate.db.periodic import PeriodicFlush
from tidegate.models import ParsingTemplate

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_FLUSH_S", "MAX_TEMPLATES", "TemplateCounts"]

DEFAULT_FLUSH_S: Final = 10.0
# Templates held between flushes (more only while flushes fail): a worker's templates are
# at most 10 active per account, so this is thousands of busy accounts.
MAX_TEMPLATES: Final = 50_000

_table: Any = ParsingTemplate.__table__
_last = _table.c.last_matched_ms
_ADD: Final = (
    update(_table)
    .where(_table.c.id == bindparam("template_id"))
    .values(
        match_count=_table.c.match_count + bindparam("lines"),
        last_matched_ms=case(
            (_last.is_(None), bindparam("at_ms")),
            (_last < bindparam("at_ms"), bindparam("at_ms")),
            else_=_last,
        ),
        # Named, so that the column's onupdate default does not move it.
        updated_at=_table.c.updated_at,
    )
)


class TemplateCounts:
    """One worker's template matches since its last flush (template id: [lines, latest
    epoch ms]). ``add`` and ``flush`` run on the event loop."""

    def __init__(self, *, flush_s: float = DEFAULT_FLUSH_S) -> None:
        self.flush_s = flush_s
        self._counts: dict[str, list[int]] = {}
        self.lost = 0  # lines not counted because MAX_TEMPLATES were waiting for a flush
        self._timer = PeriodicFlush(self.flush, interval_s=flush_s, name="parsing template counts")
        self._lock = asyncio.Lock()

    def __len__(self) -> int:
        return len(self._counts)

    def add(self, hits: Mapping[str, int], *, at_ms: int) -> None:
        """A committed batch's matches (template id: lines), ingested at ``at_ms``."""
        for template_id, lines in hits.items():
            row = self._counts.get(template_id)
            if row is None:
                if len(self._counts) >= MAX_TEMPLATES:  # flushes failing for long
                    self.lost += lines
                    continue
                row = self._counts[template_id] = [0, at_ms]
            row[0] += lines
            row[1] = max(row[1], at_ms)

    async def flush(self, db: Database) -> int:
        """Add the counts so far to the templates; answers how many templates were
        written. Counts that cannot be written are kept for the next flush."""
        async with self._lock:
            counts, self._counts = self._counts, {}
            if not counts:
                return 0
            # In id order: two workers flushing at once lock the rows in the same order.
            rows: list[dict[str, Any]] = [
                {"template_id": template_id, "lines": values[0], "at_ms": values[1]}
                for template_id, values in sorted(counts.items())
            ]
            try:
                async with db.write_sessions() as session, session.begin():
                    await session.execute(_ADD, rows)
            except Exception as error:  # keep the counts; the next flush retries
                log.warning("parsing template counts not flushed (%d kept): %s", len(rows), error)
                for template_id, (lines, at_ms) in counts.items():
                    self.add({template_id: lines}, at_ms=at_ms)
                return 0
            return len(rows)

    def start(self, db: Database) -> None:
        self._timer.start(db)

    async def close(self, db: Database) -> None:
        """Stop flushing on a timer and flush what is left."""
        await self._timer.close(db)

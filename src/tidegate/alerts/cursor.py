"""The evaluator's cursor over the stored lines: reading the next batch in id order,
the ids it must watch for a late commit (PostgreSQL), and the compare-and-set that
makes an evaluation count once (docs/alerts.md "Exactly once")."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Text, cast, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.db.conflicts import insert_for
from tidegate.models import AlertCursor, LogLine

CURSOR = "lines"
# The lease of the worker that judges the pipeline alerts judged on events
# (runtime.alert_events); made by migration 0024.
EVENTS_LEASE = "pipeline-events"
MAX_GAPS = 64

_COLUMNS = (
    LogLine.id,
    LogLine.account_id,
    LogLine.ts,
    LogLine.received_ms,
    LogLine.host,
    LogLine.app,
    LogLine.level,
    LogLine.env,
    LogLine.file,
    LogLine.ip,
    LogLine.mac,
    # As their JSON text: decoded by the matching process, not the server's.
    cast(LogLine.tags, Text).label("tags"),
    cast(LogLine.meta, Text).label("meta"),
    LogLine.line,
    cast(LogLine.meta_unindexed, Text).label("meta_unindexed"),
)
NAMES = tuple(str(column.key) for column in _COLUMNS)


@dataclass(slots=True)
class CursorState:
    last_line_id: int
    gaps: list[list[int]]
    version: int
    evaluated_ms: int

    def gap_ids(self) -> int:
        return sum(high - low + 1 for low, high, _ in self.gaps)


@dataclass(slots=True)
class Batch:
    rows: list[tuple[Any, ...]]  # in NAMES order
    last_line_id: int
    gaps: list[list[int]]
    full: bool
    filled: set[int] = field(default_factory=set)


async def ensure_cursor(session: AsyncSession, *, now_ms: int) -> None:
    """The cursor row, created at the store's current end: alerts judge lines that
    arrive from now on, never the history. INSERT ... ON CONFLICT DO NOTHING: workers
    starting at once (``tidegate serve --workers 4`` on a new database) make one row;
    the others' inserts change nothing, where a plain insert failed their first round
    on the primary key."""
    if await session.get(AlertCursor, CURSOR) is not None:
        return
    top = (await session.execute(select(func.max(LogLine.id)))).scalar_one_or_none() or 0
    await session.execute(
        insert_for(session, AlertCursor)
        .values(
            name=CURSOR,
            last_line_id=top,
            gaps=[],
            version=0,
            lease_owner=None,
            lease_until_ms=0,
            evaluated_ms=now_ms,
            extra={},
        )
        .on_conflict_do_nothing(index_elements=[AlertCursor.name])
    )


async def claim(
    session: AsyncSession, *, owner: str, now_ms: int, lease_ms: int, name: str = CURSOR
) -> bool:
    """Take (or renew) the lease of the cursor ``name``; False while another worker
    holds it."""
    result = await session.execute(
        update(AlertCursor)
        .where(
            AlertCursor.name == name,
            or_(
                AlertCursor.lease_owner.is_(None),
                AlertCursor.lease_owner == owner,
                AlertCursor.lease_until_ms < now_ms,
            ),
        )
        .values(lease_owner=owner, lease_until_ms=now_ms + lease_ms)
    )
    return bool(getattr(result, "rowcount", 0) == 1)


async def release(session: AsyncSession, *, owner: str, name: str = CURSOR) -> None:
    """Give the lease up (a worker stopping): another takes it at its next round."""
    await session.execute(
        update(AlertCursor)
        .where(AlertCursor.name == name, AlertCursor.lease_owner == owner)
        .values(lease_owner=None, lease_until_ms=0)
    )


async def read_state(session: AsyncSession) -> CursorState:
    row = await session.get(AlertCursor, CURSOR, populate_existing=True)
    assert row is not None
    return CursorState(
        last_line_id=row.last_line_id,
        gaps=[list(gap) for gap in row.gaps],
        version=row.version,
        evaluated_ms=row.evaluated_ms,
    )


async def top_line_id(session: AsyncSession) -> int:
    return (await session.execute(select(func.max(LogLine.id)))).scalar_one_or_none() or 0


async def read_batch(
    session: AsyncSession,
    state: CursorState,
    *,
    limit: int,
    now_ms: int,
    track_gaps: bool,
    gap_grace_ms: int,
) -> Batch:
    """The next lines after the cursor (at most ``limit``), plus any line that has
    meanwhile committed into a watched gap. New gaps are the ids absent between the
    lines read; watched gaps older than the grace are given up."""
    rows: list[tuple[Any, ...]] = []
    filled: set[int] = set()
    gaps = [gap for gap in state.gaps if now_ms - gap[2] <= gap_grace_ms] if track_gaps else []
    if gaps:
        late = await session.execute(
            select(*_COLUMNS)
            .where(or_(*(LogLine.id.between(low, high) for low, high, _ in gaps)))
            .order_by(LogLine.id)
            .limit(limit)
        )
        for values in late:
            rows.append(tuple(values))
            filled.add(values[0])
        gaps = _without(gaps, filled)
    result = await session.execute(
        select(*_COLUMNS).where(LogLine.id > state.last_line_id).order_by(LogLine.id).limit(limit)
    )
    fresh = [tuple(values) for values in result]
    last = state.last_line_id
    for row in fresh:
        if track_gaps and row[0] > last + 1:
            gaps.append([last + 1, row[0] - 1, now_ms])
        last = row[0]
    rows.extend(fresh)
    if len(gaps) > MAX_GAPS:
        gaps = gaps[-MAX_GAPS:]  # the oldest are given up first
    return Batch(rows=rows, last_line_id=last, gaps=gaps, full=len(fresh) >= limit, filled=filled)


def _without(gaps: list[list[int]], ids: set[int]) -> list[list[int]]:
    """``gaps`` with ``ids`` taken out (a range split around each)."""
    if not ids:
        return gaps
    result: list[list[int]] = []
    for low, high, seen in gaps:
        start = low
        for found in sorted(i for i in ids if low <= i <= high):
            if found > start:
                result.append([start, found - 1, seen])
            start = found + 1
        if start <= high:
            result.append([start, high, seen])
    return result


async def commit_position(
    session: AsyncSession,
    state: CursorState,
    *,
    last_line_id: int,
    gaps: list[list[int]],
    evaluated_ms: int,
) -> bool:
    """Move the cursor, if nobody else moved it since ``state`` was read."""
    result = await session.execute(
        update(AlertCursor)
        .where(AlertCursor.name == CURSOR, AlertCursor.version == state.version)
        .values(
            last_line_id=last_line_id,
            gaps=gaps,
            version=state.version + 1,
            evaluated_ms=evaluated_ms,
        )
    )
    return bool(getattr(result, "rowcount", 0) == 1)

"""The alert evaluator: reads the stored lines after its cursor in batches, feeds each
watched view's channels the lines that match, and records firings in the outbox, all
in one transaction with the cursor's move (docs/alerts.md).

One round (``evaluate``) runs in whichever worker holds the cursor's lease; the
compare-and-set on the cursor's version makes a batch count exactly once even if two
workers ever evaluate at the same time (a lease that expired mid-round). Matching is
CPU work and runs in a worker thread, never on the event loop; nothing here touches
the ingest path: lines are read back from the store after they committed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.alerts import cursor as cursors
from tidegate.alerts.notification import Notification
from tidegate.alerts.sealed import seal_channel
from tidegate.alerts.watched import WatchedView, WatchList
from tidegate.alerts.windows import ChannelWindow, WindowState
from tidegate.auth.secrets import Sealer
from tidegate.config import Settings
from tidegate.db.engine import Database
from tidegate.logs.record import public_record
from tidegate.models import AlertDelivery, AlertState

log = logging.getLogger(__name__)

MAX_BATCHES_PER_ROUND = 20


@dataclass(slots=True)
class RoundResult:
    claimed: bool = False
    lines: int = 0
    firings: int = 0
    lost_race: bool = False


@dataclass(slots=True)
class _Window:
    watched: WatchedView
    key: str
    window: ChannelWindow
    before: dict[str, Any]


def _record(row: dict[str, Any]) -> dict[str, Any]:
    return public_record(
        line=row["line"],
        ts=row["ts"],
        host=row["host"],
        app=row["app"],
        level=row["level"],
        env=row["env"],
        file=row["file"],
        ip=row["ip"],
        mac=row["mac"],
        tags=row["tags"],
        meta=row["meta"] if isinstance(row["meta"], dict) else None,
        line_id=row["id"],
    )


def match_batch(rows: list[dict[str, Any]], windows: dict[str, list[list[_Window]]]) -> None:
    """Feed every matching line to its view's channels (CPU: in a worker thread).
    ``windows``: account -> per view, the view's channel windows."""
    for row in rows:
        views = windows.get(row["account_id"])
        if not views:
            continue
        record: dict[str, Any] | None = None
        for channel_windows in views:
            if not channel_windows[0].watched.matches(row):
                continue
            if record is None:
                record = _record(row)
            for item in channel_windows:
                item.window.on_line(row["received_ms"], record)


class Evaluator:
    def __init__(
        self,
        db: Database,
        sealer: Sealer,
        settings: Settings,
        *,
        owner: str,
        clock: Callable[[], int],
    ) -> None:
        self.db = db
        self.sealer = sealer
        self.settings = settings
        self.owner = owner
        self.clock = clock
        self.watch = WatchList(sealer)
        self.track_gaps = db.sqlite_path is None

    async def evaluate(self) -> RoundResult:
        """One round: claim the lease, then batches until caught up (bounded)."""
        result = RoundResult()
        now = self.clock()
        lease_ms = int(max(10.0, self.settings.alert_tick_s * 10) * 1000)
        async with self.db.write_sessions() as session:
            await cursors.ensure_cursor(session, now_ms=now)
            claimed = await cursors.claim(session, owner=self.owner, now_ms=now, lease_ms=lease_ms)
            await session.commit()
        if not claimed:
            return result
        result.claimed = True
        for _ in range(MAX_BATCHES_PER_ROUND):
            done = await self._one_batch(result)
            if done:
                break
        return result

    async def _one_batch(self, result: RoundResult) -> bool:
        now = self.clock()
        async with self.db.read_sessions() as session:
            state = await cursors.read_state(session)
            watched = await self.watch.load(session)
            if not watched:
                # Nothing to judge: the cursor follows the store's end.
                top = await cursors.top_line_id(session)
                batch = cursors.Batch(
                    rows=[], last_line_id=max(top, state.last_line_id), gaps=[], full=False
                )
                states: dict[tuple[str, str], dict[str, Any]] = {}
            else:
                batch = await cursors.read_batch(
                    session,
                    state,
                    limit=self.settings.alert_batch_lines,
                    now_ms=now,
                    track_gaps=self.track_gaps,
                    gap_grace_ms=int(self.settings.alert_gap_grace_s * 1000),
                )
                states = await self._states(session, watched)
        windows = self._windows(watched, states, now)
        if batch.rows:
            await asyncio.to_thread(match_batch, batch.rows, windows)
        horizon = now - int(self.settings.alert_settle_s * 1000)
        if not batch.full:
            for views in windows.values():
                for channel_windows in views:
                    for item in channel_windows:
                        item.window.advance(horizon)
        evaluated = horizon if not batch.full else state.evaluated_ms
        committed = await self._commit(state, batch, windows, evaluated, now, result)
        if not committed:
            result.lost_race = True
            return True
        result.lines += len(batch.rows)
        return not batch.full

    async def _states(
        self, session: AsyncSession, watched: dict[str, list[WatchedView]]
    ) -> dict[tuple[str, str], dict[str, Any]]:
        view_ids = [view.view_id for views in watched.values() for view in views]
        found: dict[tuple[str, str], dict[str, Any]] = {}
        for start in range(0, len(view_ids), 500):
            rows = await session.execute(
                select(AlertState.view_id, AlertState.channel_key, AlertState.state).where(
                    AlertState.view_id.in_(view_ids[start : start + 500])
                )
            )
            for view_id, key, state in rows:
                found[(view_id, key)] = state
        return found

    def _windows(
        self,
        watched: dict[str, list[WatchedView]],
        states: dict[tuple[str, str], dict[str, Any]],
        now: int,
    ) -> dict[str, list[list[_Window]]]:
        windows: dict[str, list[list[_Window]]] = {}
        for account_id, views in watched.items():
            for view in views:
                channel_windows = []
                for key, channel in view.channels:
                    stored = states.get((view.view_id, key))
                    state = WindowState.load(stored)
                    channel_windows.append(
                        _Window(
                            watched=view,
                            key=key,
                            window=ChannelWindow(channel, state, now_ms=max(now, view.since_ms)),
                            before=stored or {},
                        )
                    )
                windows.setdefault(account_id, []).append(channel_windows)
        return windows

    async def _commit(
        self,
        state: cursors.CursorState,
        batch: cursors.Batch,
        windows: dict[str, list[list[_Window]]],
        evaluated: int,
        now: int,
        result: RoundResult,
    ) -> bool:
        """The cursor's move, the channels' states and the outbox rows of what fired,
        in one transaction: all of it or none of it."""
        async with self.db.write_sessions() as session:
            moved = await cursors.commit_position(
                session,
                state,
                last_line_id=batch.last_line_id,
                gaps=batch.gaps,
                evaluated_ms=evaluated,
            )
            if not moved:
                await session.rollback()
                return False
            changed = []
            for views in windows.values():
                for channel_windows in views:
                    for item in channel_windows:
                        dumped = item.window.state.dump()
                        if dumped != item.before:
                            changed.append((item, dumped))
                        for firing in item.window.firings:
                            session.add(self._delivery(item, firing, now))
                            result.firings += 1
            for item, dumped in changed:
                await session.execute(
                    delete(AlertState).where(
                        AlertState.view_id == item.watched.view_id,
                        AlertState.channel_key == item.key,
                    )
                )
                session.add(
                    AlertState(
                        view_id=item.watched.view_id,
                        channel_key=item.key,
                        account_id=item.watched.account_id,
                        state=dumped,
                    )
                )
            await session.commit()
        return True

    def _delivery(self, item: _Window, firing: Any, now: int) -> AlertDelivery:
        view = item.watched
        channel = item.window.channel
        notification = Notification(
            event=firing.event,
            source="view",
            account_id=view.account_id,
            name=view.name,
            fired_ms=firing.at_ms,
            count=firing.count,
            operator=channel.operator,
            triggerlimit=channel.triggerlimit,
            triggerinterval=channel.triggerinterval,
            view_id=view.view_id,
            query=view.query,
            matches=firing.matches,
            url=f"{self.settings.public_url.rstrip('/')}/views/{view.view_id}",
        )
        return AlertDelivery(
            account_id=view.account_id,
            view_id=view.view_id,
            source="view",
            channel_key=item.key,
            integration=channel.integration,
            channel_sealed=seal_channel(self.sealer, channel),
            event=firing.event,
            payload=notification.as_payload(),
            status="pending",
            attempts=0,
            fired_ms=firing.at_ms,
            next_attempt_ms=now,
            claimed_by=None,
            claimed_until_ms=0,
        )

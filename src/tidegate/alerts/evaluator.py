"""The alert evaluator: reads the stored lines after its cursor in batches, feeds each
watched view's channels the lines that match, and records firings in the outbox, all
in one transaction with the cursor's move (docs/alerts.md).

One round (``evaluate``) runs in whichever worker holds the cursor's lease; the
compare-and-set on the cursor's version makes a batch count exactly once even if two
workers ever evaluate at the same time (a lease that expired mid-round). Matching is
CPU work and runs in a process of its own (``matching.MatchingPool``); nothing here
touches the ingest path: lines are read back from the store after they committed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.alerts import cursor as cursors
from tidegate.alerts.matching import MatchingPool, Outcome, StateKey, ViewSpec
from tidegate.alerts.notification import Notification, view_link
from tidegate.alerts.sealed import seal_channel
from tidegate.alerts.watched import WatchList
from tidegate.alerts.windows import Firing, trigger_window_ms
from tidegate.auth.secrets import Sealer
from tidegate.config import Settings
from tidegate.db.engine import Database
from tidegate.models import AlertDelivery, AlertState, View

log = logging.getLogger(__name__)

MAX_BATCHES_PER_ROUND = 20


@dataclass(slots=True)
class RoundResult:
    claimed: bool = False
    lines: int = 0
    firings: int = 0
    lost_race: bool = False


def _link_window(firing: Firing, window_ms: int) -> dict[str, int]:
    """The times an alert's link opens the view over: the window that fired (a resolve:
    the trigger window before it), widened to the lines sent with it. A window counts
    lines by when they arrived, the search finds them by their own time, and the two
    differ for a backlog shipped late or a host whose clock is off."""
    stamps = [m["_ts"] for m in firing.matches if isinstance(m.get("_ts"), int)]
    return {
        "from_ms": min([firing.at_ms - window_ms, *stamps]),
        "to_ms": max([firing.at_ms, *stamps]),
    }


class Evaluator:
    def __init__(
        self,
        db: Database,
        sealer: Sealer,
        settings: Settings,
        *,
        owner: str,
        clock: Callable[[], int],
        matching: MatchingPool | None = None,
    ) -> None:
        self.db = db
        self.sealer = sealer
        self.settings = settings
        self.owner = owner
        self.clock = clock
        self.watch = WatchList(sealer, window_scale=settings.alert_window_scale)
        self.matching = matching or MatchingPool(in_process=True)
        self.track_gaps = db.sqlite_path is None
        # The channel states this evaluator committed last, and the cursor version
        # that commit made: while the cursor still has that version nobody else has
        # written states since, so they need not be read back.
        self._committed: tuple[int, dict[StateKey, dict[str, Any]]] | None = None

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
            if await self._one_batch(result):
                break
        return result

    async def _one_batch(self, result: RoundResult) -> bool:
        """One batch read, matched and committed; True when caught up (or beaten)."""
        now = self.clock()
        settle_ms = int(self.settings.alert_settle_s * 1000)
        states: dict[StateKey, dict[str, Any]] = {}
        # A line is judged by the views as they were read after it committed, never
        # by older ones: one that arrives after a channel is edited meets the edited
        # channel. So the lines are fixed before the views are read (the reads are
        # separate snapshots): on SQLite the batch ends at the last line committed
        # now (ids commit in order; the matching process reads up to it, later); on
        # PostgreSQL the views are read again after the lines (cheap: a change stamp).
        sqlite = self.db.sqlite_path is not None
        async with self.db.read_sessions() as session:
            state = await cursors.read_state(session)
            # The store's end: the SQLite batch's bound, or (no views) where the cursor
            # goes. PostgreSQL's batch is bounded by its LIMIT, so it reads the end only
            # when there is nothing to judge, before reading the views again.
            top = await cursors.top_line_id(session) if sqlite else None
            specs = await self.watch.load(session)
            if specs and not sqlite:
                batch = await cursors.read_batch(
                    session,
                    state,
                    limit=self.settings.alert_batch_lines,
                    now_ms=now,
                    track_gaps=self.track_gaps,
                    gap_grace_ms=int(self.settings.alert_gap_grace_s * 1000),
                )
                specs = await self.watch.load(session)
            if not specs and top is None:
                top = await cursors.top_line_id(session)
                if await self.watch.load(session):
                    # A view appeared since: the lines up to here wait for the next round.
                    top = state.last_line_id
            if not specs:
                assert top is not None
                # Nothing to judge: the cursor follows the store's end.
                batch = cursors.Batch(
                    rows=[], last_line_id=max(top, state.last_line_id), gaps=[], full=False
                )
            elif self._committed is not None and self._committed[0] == state.version:
                states = self._committed[1]
            else:
                states = await self._states(session, specs)
        lines = len(batch.rows) if not specs or self.db.sqlite_path is None else 0
        if not specs:
            outcome = Outcome(states={}, firings=[])
        elif self.db.sqlite_path is not None:
            # SQLite: the matching process reads the lines itself.
            assert top is not None
            done = await self.matching.run_sqlite(
                self.db.sqlite_path,
                specs,
                states,
                state.last_line_id,
                top,
                self.settings.alert_batch_lines,
                now,
                settle_ms,
            )
            outcome, lines = done.outcome, done.rows
            batch = cursors.Batch(rows=[], last_line_id=done.last_line_id, gaps=[], full=done.full)
        else:
            outcome = await self.matching.run(
                specs, states, batch.rows, now, None if batch.full else now - settle_ms
            )
        horizon = None if batch.full else now - settle_ms
        evaluated = horizon if horizon is not None else state.evaluated_ms
        fired = await self._commit(state, batch, specs, states, outcome, evaluated, now)
        if fired is None:
            result.lost_race = True
            self._committed = None
            return True
        self._committed = (state.version + 1, {**states, **outcome.states})
        result.lines += lines
        result.firings += fired
        return not batch.full

    async def _states(
        self, session: AsyncSession, specs: list[ViewSpec]
    ) -> dict[StateKey, dict[str, Any]]:
        view_ids = [spec.view_id for spec in specs]
        found: dict[StateKey, dict[str, Any]] = {}
        for start in range(0, len(view_ids), 500):
            rows = await session.execute(
                select(AlertState.view_id, AlertState.channel_key, AlertState.state).where(
                    AlertState.view_id.in_(view_ids[start : start + 500])
                )
            )
            for view_id, key, state in rows:
                found[(view_id, key)] = state
        return found

    async def _commit(
        self,
        state: cursors.CursorState,
        batch: cursors.Batch,
        specs: list[ViewSpec],
        before: dict[StateKey, dict[str, Any]],
        outcome: Outcome,
        evaluated: int,
        now: int,
    ) -> int | None:
        """The cursor's move, the channels' states and the outbox rows of what fired,
        in one transaction: all of it or none of it. The firings written, or None when
        another worker moved the cursor first (nothing is written)."""
        by_view = {spec.view_id: spec for spec in specs}
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
                return None
            altered = {
                view_id
                for (view_id, key), dumped in outcome.states.items()
                if before.get((view_id, key)) != dumped
            }
            # A view deleted since the round read it (or its account) takes its states
            # and firings with it; written anyway, they would fail the whole round, every
            # account's, on the foreign keys. Only the views written for are looked up
            # (most rounds change few of the states they judge); on PostgreSQL they are
            # locked against deletion until the commit (SQLite's writer holds the
            # database).
            present = await _present_views(
                session, altered | {view_id for view_id, _key, _firing in outcome.firings}
            )
            changed = [
                {
                    "view_id": view_id,
                    "channel_key": key,
                    "account_id": by_view[view_id].account_id,
                    "state": dumped,
                }
                for (view_id, key), dumped in outcome.states.items()
                if before.get((view_id, key)) != dumped and view_id in present
            ]
            # The views whose states are written again, all their channels: once, not
            # per channel.
            rewritten = altered & present
            if changed:
                # Two statements whatever the number of channels (executemany).
                await session.execute(delete(AlertState).where(AlertState.view_id.in_(rewritten)))
                unchanged = [
                    {
                        "view_id": view_id,
                        "channel_key": key,
                        "account_id": by_view[view_id].account_id,
                        "state": before[(view_id, key)],
                    }
                    for (view_id, key), dumped in outcome.states.items()
                    if before.get((view_id, key)) == dumped and view_id in rewritten
                ]
                await session.execute(insert(AlertState), changed + unchanged)
            fired = [
                self._delivery(by_view[view_id], key, firing, now)
                for view_id, key, firing in outcome.firings
                if view_id in present
            ]
            session.add_all(fired)
            await session.commit()
        return len(fired)

    def _delivery(self, view: ViewSpec, key: str, firing: Firing, now: int) -> AlertDelivery:
        channel = self.watch.channels[(view.view_id, key)]
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
            url=view_link(
                self.settings.public_url,
                view.view_id,
                account_id=view.account_id,
                **_link_window(
                    firing, trigger_window_ms(channel, self.settings.alert_window_scale)
                ),
            ),
        )
        return AlertDelivery(
            account_id=view.account_id,
            view_id=view.view_id,
            source="view",
            channel_key=key,
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


async def _present_views(session: AsyncSession, view_ids: set[str]) -> set[str]:
    """Which of ``view_ids`` are still there, each locked against deletion (``FOR KEY
    SHARE``; SQLite has no row locks and needs none) until the transaction ends."""
    ordered = sorted(view_ids)
    found: set[str] = set()
    for start in range(0, len(ordered), 500):
        rows = await session.execute(
            select(View.id)
            .where(View.id.in_(ordered[start : start + 500]))
            .with_for_update(key_share=True)
        )
        found.update(rows.scalars())
    return found

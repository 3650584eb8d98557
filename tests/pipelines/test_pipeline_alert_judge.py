"""One worker judges the pipeline alerts judged on events (runtime/alert_events.py):
the holder of the ``pipeline-events`` lease. The other workers hand their events over
through the ``pipeline_alert_events`` table, so a load spread over workers is judged
whole. In process, two judges as two workers' would be, on one database; each is given
its own clock for the lease, and the rounds their windows' time."""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy import func, insert, select
from tests.conftest import AppClient
from tests.gateway.factories import Wired
from tests.pipelines.test_pipeline_alert_events import (
    SUM_BYTES,
    WINDOW_MS,
    _add,
    _alert,
    _fired,
    _more_than,
    _post,
    _wired_with_events,
)

from tidegate.app_state import AppState
from tidegate.clock import now_ms
from tidegate.models import PipelineAlert, PipelineAlertEvents, PipelineAlertWindows
from tidegate.runtime import alert_events
from tidegate.runtime.alert_events import AlertEvents

BUSY_HOST = {
    "alert_type": "threshold",
    "event_type": "log",
    "operation": "CUSTOM",
    "script": SUM_BYTES,
    "group_by": [".host"],
    "conditional": _more_than(".bytes", 100),
}


def _worker(state: AppState, clock_ms: int) -> AlertEvents:
    return AlertEvents(state.settings, clock=lambda: clock_ms)


async def _queued(state: AppState) -> int:
    async with state.db.read_sessions() as session:
        return int(
            await session.scalar(select(func.coalesce(func.sum(PipelineAlertEvents.count), 0))) or 0
        )


async def _judged(client: AppClient) -> tuple[AppState, Wired, AlertEvents, int]:
    """The busy host alert, and its judge with the lease's clock stopped at the time
    returned (a single worker)."""
    state, wired, judge = await _wired_with_events(client)
    await _add(client, wired, BUSY_HOST, "busy host")
    at = now_ms()
    judge.clock = lambda: at
    await judge.refresh(state.db)
    return state, wired, judge, at


async def _round(judge: AlertEvents, state: AppState, at_ms: int) -> int:
    return await judge.round(state.db, state.sealer, at_ms=at_ms)


async def test_a_load_spread_over_two_workers_is_judged_whole(isolated_client: AppClient) -> None:
    """Host a's 90 bytes in one worker and 60 in the other hold no condition alone
    (more than 100); judged together they do, once, in the worker holding the lease."""
    client = isolated_client
    state, wired, first = await _wired_with_events(client)
    await _add(client, wired, BUSY_HOST, "busy host")
    lease_at = now_ms()
    second = _worker(state, lease_at)
    first.clock = lambda: lease_at
    start = now_ms()
    for judge in (first, second):
        await judge.refresh(state.db)
    assert await _round(first, state, start) == 0  # it takes the lease
    state.pipelines.alert_events = second
    await _post(client, wired, [{"host": "a", "bytes": 30}] * 3)
    assert await _round(second, state, start) == 0
    assert (second.judging, second.handed, await _queued(state)) == (False, 3, 3)
    state.pipelines.alert_events = first
    await _post(client, wired, [{"host": "a", "bytes": 30}] * 2 + [{"host": "b", "bytes": 1}])
    assert await _round(first, state, start) == 0  # the window is open
    assert (first.judging, await _queued(state)) == (True, 0)
    assert await _round(second, state, start + 2 * WINDOW_MS) == 0
    assert await _round(first, state, start + 2 * WINDOW_MS) == 1
    [(name, count, aggregate)] = await _fired(state, wired.account.account_id)
    assert (name, count, aggregate["host"], aggregate["bytes"]) == ("busy host", 5, "a", 150)


async def test_another_worker_judges_once_the_lease_lapses(isolated_client: AppClient) -> None:
    """The judge stops renewing (its process hangs, say): after ``LEASE_MS`` another
    worker judges, from the windows the old one saved; the old one, back, hands its
    events over and forgets its windows, so nothing is judged twice."""
    client = isolated_client
    state, wired, _ = await _wired_with_events(client)
    await _add(client, wired, BUSY_HOST, "busy host")
    at = now_ms()
    old, new = _worker(state, at), _worker(state, at + alert_events.LEASE_MS + 1)
    start = now_ms()
    for judge in (old, new):
        await judge.refresh(state.db)
    state.pipelines.alert_events = old
    await _post(client, wired, [{"host": "a", "bytes": 60}])
    assert await _round(old, state, start) == 0
    assert old.judging
    [watch] = old._watches.values()
    folded = watch.aggregator
    assert await _round(new, state, start) == 0
    assert new.judging  # the old lease had lapsed by the new worker's clock
    await _post(client, wired, [{"host": "a", "bytes": 20}])  # into the old worker
    assert await _round(old, state, start) == 0
    assert (old.judging, old.handed) == (False, 1)
    assert watch.aggregator is not folded  # its window forgotten
    state.pipelines.alert_events = new
    await _post(client, wired, [{"host": "a", "bytes": 30}])
    assert await _round(new, state, start) == 0
    # The new judge's window: the 60 the old one saved, the 20 it handed over and the
    # new one's own 30; the old one's 60 is not judged again by it.
    assert await _round(new, state, start + 2 * WINDOW_MS) == 1
    assert await _round(old, state, start + 2 * WINDOW_MS) == 0
    [(_, count, aggregate)] = await _fired(state, wired.account.account_id)
    assert (count, aggregate["bytes"]) == (3, 110)


async def _restarted(state: AppState, at: int) -> AlertEvents:
    """A worker of a new process, after the judge's lease lapsed (a SIGKILL, say)."""
    judge = _worker(state, at + alert_events.LEASE_MS + 1)
    await judge.refresh(state.db)
    state.pipelines.alert_events = judge
    return judge


async def test_a_new_judge_starts_from_the_windows_the_last_one_saved(
    isolated_client: AppClient,
) -> None:
    """Windows outlive their judge: 90 bytes folded before a restart and 60 after
    make one window of 150 (more than 100), as if the server had never stopped."""
    client = isolated_client
    state, wired, judge, at = await _judged(client)
    await _post(client, wired, [{"host": "a", "bytes": 30}] * 3)
    assert await _round(judge, state, at) == 0
    restarted = await _restarted(state, at)
    await _post(client, wired, [{"host": "a", "bytes": 30}] * 2)
    assert await _round(restarted, state, at) == 0
    assert await _round(restarted, state, at + 2 * WINDOW_MS) == 1
    [(_, count, aggregate)] = await _fired(state, wired.account.account_id)
    assert (count, aggregate["bytes"]) == (5, 150)
    # The window that fired left the saved windows with its firing: a judge that
    # starts now does not judge it again.
    again = await _restarted(state, at + alert_events.LEASE_MS + 1)
    assert await _round(again, state, at + 2 * WINDOW_MS) == 0
    assert again.judging
    assert len(await _fired(state, wired.account.account_id)) == 1


async def test_windows_folded_under_another_definition_are_not_restored(
    isolated_client: AppClient,
) -> None:
    """The alert changed while no worker judged (a limit of 120 now): its windows of
    the old definition start again."""
    client = isolated_client
    state, wired, judge, at = await _judged(client)
    [alert_id] = judge._watches
    await _post(client, wired, [{"host": "a", "bytes": 100}])
    assert await _round(judge, state, at) == 0
    body = _alert(wired, {**BUSY_HOST, "conditional": _more_than(".bytes", 120)}, "busy host")
    body["id"] = alert_id
    response = await client.put(
        f"/v3/pipeline/{wired.pipeline_id}/source/{wired.source_id}/alert/{alert_id}",
        json=body,
        headers=wired.account.headers,
    )
    assert response.status_code == 200, response.text
    restarted = await _restarted(state, at)
    await _post(client, wired, [{"host": "a", "bytes": 30}])
    assert await _round(restarted, state, at) == 0
    assert await _round(restarted, state, at + 2 * WINDOW_MS) == 0  # 30, not 130
    assert await _fired(state, wired.account.account_id) == []


async def test_a_judge_that_stops_gives_the_lease_up(isolated_client: AppClient) -> None:
    client = isolated_client
    state, wired, _ = await _wired_with_events(client)
    await _add(client, wired, BUSY_HOST, "busy host")
    at = now_ms()
    first, second = _worker(state, at), _worker(state, at)
    for judge in (first, second):
        await judge.refresh(state.db)
    await _round(first, state, at)
    await _round(second, state, at)
    assert (first.judging, second.judging) == (True, False)
    await first.close(state.db)
    await _round(second, state, at)
    assert second.judging


def _handed_row(alert: str, created_ms: int, events: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "alert_id": alert,
        "created_ms": created_ms,
        "count": len(events),
        "events": orjson.dumps(events),
    }


async def _hand(state: AppState, *rows: dict[str, Any]) -> None:
    """Rows as another worker hands them over."""
    async with state.db.write_sessions() as session:
        await session.execute(insert(PipelineAlertEvents), list(rows))
        await session.commit()


async def test_rows_no_judge_took_in_time_and_rows_of_other_alerts_are_dropped(
    isolated_client: AppClient,
) -> None:
    """The table stays bounded while no worker judges: a row older than ``STALE_MS`` is
    dropped unjudged, as is a row of an alert no longer judged (paused meanwhile);
    both are counted in ``skipped``."""
    client = isolated_client
    state, wired, judge, at = await _judged(client)
    [alert_id] = judge._watches
    await _add(client, wired, {**BUSY_HOST, "window_duration_minutes": 2}, "paused")
    paused = await _alert_id(state, "paused")
    busy = [{"host": "a", "bytes": 200}]
    await _hand(
        state,
        _handed_row(alert_id, at - alert_events.STALE_MS - 1, busy * 4),
        _handed_row(paused, at, busy),
    )
    body = _alert(wired, {**BUSY_HOST, "window_duration_minutes": 2}, "paused")
    response = await client.put(
        f"/v3/pipeline/{wired.pipeline_id}/source/{wired.source_id}/alert/{paused}",
        json={**body, "id": paused, "active": False},
        headers=wired.account.headers,
    )
    assert response.status_code == 200, response.text
    await judge.refresh(state.db)
    assert list(judge._watches) == [alert_id]
    assert await _round(judge, state, at) == 0
    assert await _round(judge, state, at + 3 * WINDOW_MS) == 0
    assert (judge.skipped, await _queued(state)) == (5, 0)
    assert await _fired(state, wired.account.account_id) == []


async def test_an_alerts_events_and_windows_leave_with_it(isolated_client: AppClient) -> None:
    """They are the tenant's events: deleting the alert deletes the rows handed over
    for it and its saved windows (foreign keys, on both backends)."""
    client = isolated_client
    state, wired, judge, at = await _judged(client)
    [alert_id] = judge._watches
    await _post(client, wired, [{"host": "a", "bytes": 30}])
    assert await _round(judge, state, at) == 0  # its windows saved
    await _hand(state, _handed_row(alert_id, at, [{"host": "a", "bytes": 1}]))
    assert await _stored(state, alert_id) == (1, 1)
    response = await client.delete(
        f"/v3/pipeline/{wired.pipeline_id}/source/{wired.source_id}/alert/{alert_id}",
        headers=wired.account.headers,
    )
    assert response.status_code == 200, response.text
    assert await _stored(state, alert_id) == (0, 0)


async def _alert_id(state: AppState, name: str) -> str:
    async with state.db.read_sessions() as session:
        alerts = (await session.scalars(select(PipelineAlert))).all()
    [found] = [alert.id for alert in alerts if alert.general["name"] == name]
    return found


async def _stored(state: AppState, alert_id: str) -> tuple[int, int]:
    """The alert's rows handed over, and its saved windows."""
    async with state.db.read_sessions() as session:
        handed = await session.scalar(
            select(func.count())
            .select_from(PipelineAlertEvents)
            .where(PipelineAlertEvents.alert_id == alert_id)
        )
        saved = await session.scalar(
            select(func.count())
            .select_from(PipelineAlertWindows)
            .where(PipelineAlertWindows.alert_id == alert_id)
        )
    return int(handed or 0), int(saved or 0)

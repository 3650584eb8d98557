"""A pipeline alert's windows count every event of its component exactly once, whenever
the runtime's usage flush lands and whenever the evaluator first sees the alert
(alerts/pipeline_alerts.py). In process, on a database of its own per backend, the
evaluator called with the clock set past each window's end."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from tests.conftest import AppClient
from tests.gateway.factories import new_account
from tests.keys.factories import with_service_key
from tests.pipelines.factories import make_pipeline, source_with_route
from tests.pipelines.test_pipeline_alerts import threshold_body

from tidegate.alerts.pipeline_alerts import evaluate_pipeline_alerts, fires, judged_window
from tidegate.app_state import AppState
from tidegate.clock import now_ms
from tidegate.models import AlertDelivery
from tidegate.models.pipeline_usage import BUCKET_MS
from tidegate.runtime.usage import add_usage

WINDOW_MS = 60_000  # window_duration_minutes 1, at the default scale


async def _alert_on_a_source(client: AppClient) -> tuple[AppState, str, str, str]:
    """A threshold alert (more than 9 events in a 1-minute window) on a pipeline's
    source, its webhook unreachable (nothing here delivers): (state, account, pid, cid)."""
    account = await with_service_key(client, await new_account(client))
    pid = await make_pipeline(client, account)
    _, source = await source_with_route(client, account, pid)
    body = threshold_body(pid, source, "https://alerts.example.com/hook")
    evaluation = body["alert_config"]["evaluation"]
    evaluation["window_duration_minutes"] = 1
    evaluation["conditional"]["expressions"][0]["value"] = 9
    response = await client.post(
        f"/v3/pipeline/{pid}/source/{source}/alert", json=body, headers=account.headers
    )
    assert response.status_code == 201, response.text
    state: AppState = client._transport.app.state.tidegate  # type: ignore[attr-defined]
    return state, account.account_id, pid, source


async def _flush(state: AppState, account: str, pid: str, cid: str, bucket: int, n: int) -> None:
    """What the runtime's usage flush writes: ``n`` events added to the minute
    ``bucket`` (the app's own flush of the events a test posted may have written that
    minute's row already)."""
    row = {
        "pipeline_id": pid,
        "component_id": cid,
        "bucket_ms": bucket,
        "account_id": account,
        "ingress_events": n,
        "ingress_bytes": 100 * n,
        "egress_events": 0,
        "egress_bytes": 0,
    }
    async with state.db.write_sessions() as session:
        await session.execute(add_usage(state.db, row))
        await session.commit()


async def _evaluate(state: AppState, at_ms: int) -> int:
    return await evaluate_pipeline_alerts(state.db, state.sealer, state.settings, now_ms=at_ms)


def _past_window(opened_ms: int, state: AppState) -> int:
    """A moment when a window opened at or before ``opened_ms`` has closed and settled
    (the clock here is the test's: how long the set-up took does not matter)."""
    return opened_ms + WINDOW_MS + int(state.settings.alert_settle_s * 1000) + 1


async def test_events_counted_before_the_evaluator_first_sees_the_alert_are_in_its_window(
    isolated_client: AppClient,
) -> None:
    state, account, pid, cid = await _alert_on_a_source(isolated_client)
    made = now_ms()  # the alert's window opened before this
    # Thirty events flushed before any evaluation pass (a loaded evaluator, a fast flush).
    await _flush(state, account, pid, cid, made - made % BUCKET_MS, 30)
    assert await _evaluate(state, _past_window(made, state)) == 1
    # Its link opens the pipeline's page in the web app, in the alert's account.
    async with state.db.read_sessions() as session:
        [delivery] = (
            await session.scalars(select(AlertDelivery).where(AlertDelivery.account_id == account))
        ).all()
    assert (
        delivery.payload["url"]
        == f"{state.settings.public_url.rstrip('/')}/pipelines/{pid}?account={account}"
    )


async def test_a_flush_that_lands_in_the_minute_before_a_window_closed_counts_in_the_next(
    isolated_client: AppClient,
) -> None:
    state, account, pid, cid = await _alert_on_a_source(isolated_client)
    first_close = _past_window(now_ms(), state)  # the alert's window opened before now
    assert await _evaluate(state, first_close) == 0  # a quiet first window
    # Events of the minute before that pass, flushed only after it (a late flush).
    late_bucket = first_close - first_close % BUCKET_MS - BUCKET_MS
    await _flush(state, account, pid, cid, late_bucket, 30)
    assert await _evaluate(state, _past_window(first_close, state)) == 1


async def test_a_sliding_window_is_judged_every_minute_over_its_last_minutes(
    isolated_client: AppClient,
) -> None:
    """A 3-minute sliding window, more than 9 events: 6 events in each of two minutes
    that straddle the tumbling windows' boundary fire it (twice: the two windows that
    hold both minutes), where tumbling windows (6 and 6) never would."""
    client = isolated_client
    account = await with_service_key(client, await new_account(client))
    pid = await make_pipeline(client, account)
    _, cid = await source_with_route(client, account, pid)
    body = threshold_body(pid, cid, "https://alerts.example.com/hook")
    evaluation = body["alert_config"]["evaluation"]
    evaluation.update(window_type="sliding", window_duration_minutes=3)
    evaluation["conditional"]["expressions"][0]["value"] = 9
    body["alert_config"]["alert_payload"]["throttling"] = {"window_secs": 1, "threshold": 1}
    response = await client.post(
        f"/v3/pipeline/{pid}/source/{cid}/alert", json=body, headers=account.headers
    )
    assert response.status_code == 201, response.text
    state: AppState = client._transport.app.state.tidegate  # type: ignore[attr-defined]
    at = _past_window(now_ms(), state)  # the first minute's end, settled
    fired = []
    for events in (0, 0, 6, 6, 0, 0):
        if events:
            await _flush(state, account.account_id, pid, cid, at - at % BUCKET_MS, events)
        fired.append(await _evaluate(state, at))
        at += WINDOW_MS
    # Minutes 1 and 2 are a window not yet 3 minutes long: not judged.
    assert fired == [0, 0, 0, 1, 1, 0]
    async with state.db.read_sessions() as session:
        deliveries = (
            await session.scalars(
                select(AlertDelivery).where(AlertDelivery.account_id == account.account_id)
            )
        ).all()
    assert sorted(delivery.payload["count"] for delivery in deliveries) == [12, 12]


def test_a_sliding_absence_is_judged_only_once_its_window_is_whole() -> None:
    evaluation = {"alert_type": "absence", "window_type": "sliding", "window_duration_minutes": 3}
    state: dict[str, Any] = {}
    judged = []
    for events in (0, 0, 5, 0, 0, 0):
        current, steps = judged_window(
            evaluation, state, {"event_count": events, "byte_count": 10 * events}
        )
        state["steps"] = steps
        judged.append(None if current is None else fires(evaluation, current, None))
    assert judged == [None, None, False, False, False, True]
    assert state["steps"] == [[0, 0], [0, 0], [0, 0]]
    tumbling = {"alert_type": "absence", "window_duration_minutes": 3}
    assert judged_window(tumbling, {}, {"event_count": 0, "byte_count": 0}) == (
        {"event_count": 0, "byte_count": 0},
        None,
    )

"""Pipeline alerts judged on the events themselves (runtime/alert_events.py): an alert
whose conditional names a field of the window's aggregate (not only the usage counts)
folds the component's events by its operation, per ``group_by`` values, and fires when
a closed window's aggregate holds. In process: events through a published pipeline's
source, the rounds run with the test's clock."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import select
from tests.conftest import AppClient
from tests.export.helpers import app_state_of
from tests.gateway.factories import Wired, new_account, wire
from tests.pipelines.test_pipeline_alert_windows import _evaluate, _flush, _past_window

from tidegate.alerts.pipeline_alerts import judged_on_events
from tidegate.app_state import AppState
from tidegate.clock import now_ms
from tidegate.models import AlertDelivery
from tidegate.models.pipeline_usage import BUCKET_MS
from tidegate.runtime import alert_events
from tidegate.runtime.alert_events import AlertEvents

WINDOW_MS = 60_000
# The mezmo provider's log alert: a CUSTOM operation, its script folding each window's
# events into the first one (``fn(accum, event, metadata)``).
SUM_BYTES = "function sumBytes(accum, event, metadata) { accum.bytes += event.bytes; return accum }"


def _alert(wired: Wired, evaluation: dict[str, Any], name: str) -> dict[str, Any]:
    return {
        "inputs": [wired.source_id],
        "active": True,
        "alert_config": {
            "general": {"name": name},
            "evaluation": {"window_type": "tumbling", "window_duration_minutes": 1, **evaluation},
            "alert_payload": {
                "service": {"name": "log_analysis", "ingestion_key": "k", "subject": "{{.host}}"},
                "throttling": {"window_secs": 1, "threshold": 10},
            },
        },
    }


def _more_than(field: str, value: int) -> dict[str, Any]:
    return {
        "expressions": [{"field": field, "str_operator": "greater", "value": value}],
        "logical_operation": "AND",
    }


def _metric_change(operator: str, value: int) -> dict[str, Any]:
    """A change alert on a metric's summed value."""
    return {
        "alert_type": "change",
        "event_type": "metric",
        "operation": "SUM",
        "conditional": {
            "expressions": [{"field": ".value.value", "str_operator": operator, "value": value}],
            "logical_operation": "AND",
        },
    }


async def _add(client: AppClient, wired: Wired, evaluation: dict[str, Any], name: str) -> None:
    response = await client.post(
        f"/v3/pipeline/{wired.pipeline_id}/source/{wired.source_id}/alert",
        json=_alert(wired, evaluation, name),
        headers=wired.account.headers,
    )
    assert response.status_code == 201, response.text


async def _wired_with_events(client: AppClient) -> tuple[AppState, Wired, AlertEvents]:
    """An account's published pipeline (its HTTP source into a blackhole), and this
    worker's judge of alerts on events, as the runtime holds it (off in the tests'
    in-process app: alerts are)."""
    state = app_state_of(client)
    account = await new_account(client, throttle=False)
    wired = await wire(client, account, [("sink", "destination", "blackhole", {}, ["source"])])
    judge = AlertEvents(state.settings)
    state.pipelines.alert_events = judge
    return state, wired, judge


async def _post(client: AppClient, wired: Wired, events: list[dict[str, Any]]) -> None:
    response = await client.post(wired.url, json=events, headers=wired.auth)
    assert response.status_code == 200, response.text


async def _fired(state: AppState, account_id: str) -> list[tuple[str, int, dict[str, Any]]]:
    async with state.db.read_sessions() as session:
        rows = (
            await session.scalars(
                select(AlertDelivery).where(AlertDelivery.account_id == account_id)
            )
        ).all()
    return sorted(
        (row.payload["name"], row.payload["count"], row.payload["aggregate"]) for row in rows
    )


async def test_a_log_alerts_script_folds_each_hosts_events(isolated_client: AppClient) -> None:
    client = isolated_client
    state, wired, judge = await _wired_with_events(client)
    evaluation = {
        "alert_type": "threshold",
        "event_type": "log",
        "operation": "CUSTOM",
        "script": SUM_BYTES,
        "group_by": [".host"],
        "event_timestamp": ".timestamp",
        "conditional": _more_than(".bytes", 100),
    }
    assert judged_on_events(evaluation)
    await _add(client, wired, evaluation, "busy host")
    await judge.refresh(state.db)
    await _post(client, wired, [{"host": "a", "bytes": 30}] * 5 + [{"host": "b", "bytes": 30}] * 2)
    start = now_ms()
    assert await judge.round(state.db, state.sealer, at_ms=start) == 0  # the window is open
    assert await judge.round(state.db, state.sealer, at_ms=start + 2 * WINDOW_MS) == 1
    [(name, count, aggregate)] = await _fired(state, wired.account.account_id)
    # Host a's five events made 150 bytes; host b's two, 60, held no condition.
    assert (name, count) == ("busy host", 5)
    assert (aggregate["host"], aggregate["bytes"]) == ("a", 150)
    assert aggregate["metadata"]["aggregate"]["event_count"] == 5
    # The usage evaluator leaves it alone (the window's 7 events counted there too: by
    # the app's own flush, then once more as a flush of another worker would add them).
    await state.pipelines.usage.flush(state.db)
    made = now_ms()
    await _flush(state, wired.account.account_id, wired.pipeline_id, wired.source_id,
                 made - made % BUCKET_MS, 7)  # fmt: skip
    assert await _evaluate(state, _past_window(made, state) + 2 * WINDOW_MS) == 0


async def test_a_metric_alert_sums_the_values(isolated_client: AppClient) -> None:
    client = isolated_client
    state, wired, judge = await _wired_with_events(client)
    for limit, name in ((25, "over 25"), (35, "over 35")):
        evaluation = {
            "alert_type": "threshold",
            "event_type": "metric",
            "operation": "SUM",
            "conditional": _more_than(".value.value", limit),
        }
        await _add(client, wired, evaluation, name)
    await judge.refresh(state.db)
    counter = {"name": "requests", "kind": "incremental", "value": {"type": "counter", "value": 10}}
    await _post(client, wired, [counter] * 3 + [{"line": "not a metric"}])
    start = now_ms()
    await judge.round(state.db, state.sealer, at_ms=start)
    assert await judge.round(state.db, state.sealer, at_ms=start + 2 * WINDOW_MS) == 1
    [(name, count, aggregate)] = await _fired(state, wired.account.account_id)
    assert (name, count, aggregate["value"]) == ("over 25", 3, {"type": "counter", "value": 30})


async def test_a_change_alert_compares_a_series_with_its_window_before(
    isolated_client: AppClient,
) -> None:
    client = isolated_client
    state, wired, judge = await _wired_with_events(client)
    await _add(client, wired, _metric_change("percent_change_greater", 50), "jump")
    await judge.refresh(state.db)
    at = now_ms()
    fired = []
    for value in (10, 12, 30):  # +20%, then +150%
        metric = {"name": "rps", "kind": "absolute", "value": {"type": "gauge", "value": value}}
        await _post(client, wired, [metric])
        await judge.round(state.db, state.sealer, at_ms=at)
        at += WINDOW_MS
        fired.append(await judge.round(state.db, state.sealer, at_ms=at))
    assert fired == [0, 0, 1]


async def test_what_reached_a_route_and_what_its_arm_sent(isolated_client: AppClient) -> None:
    """Judged on events, a whole route counts what reached it and an arm what it sent,
    as the usage counts count them (test_pipeline_alert_arms.py)."""
    client = isolated_client
    state = app_state_of(client)
    account = await new_account(client, throttle=False)
    route_config = {
        "conditionals": [
            {
                "output_name": "errors",
                "expressions": [{"field": ".level", "str_operator": "equal", "value": "error"}],
            }
        ]
    }
    wired = await wire(
        client,
        account,
        [
            ("route", "processor", "route", route_config, ["source"]),
            ("sink", "destination", "blackhole", {}, ["route.errors", "route._unmatched"]),
        ],
    )
    judge = AlertEvents(state.settings)
    state.pipelines.alert_events = judge
    route = wired.nodes["route"]
    for inputs, name in (([route], "whole route"), ([f"{route}.errors"], "errors arm")):
        body = _alert(wired, {
            "alert_type": "threshold",
            "event_type": "log",
            "operation": "CUSTOM",
            "script": SUM_BYTES,
            "conditional": _more_than(".bytes", 0),
        }, name)  # fmt: skip
        body["inputs"] = inputs
        response = await client.post(
            f"/v3/pipeline/{wired.pipeline_id}/transform/{route}/alert",
            json=body,
            headers=account.headers,
        )
        assert response.status_code == 201, response.text
    await judge.refresh(state.db)
    await _post(
        client, wired, [{"level": "error", "bytes": 1}] * 3 + [{"level": "info", "bytes": 1}] * 5
    )
    start = now_ms()
    await judge.round(state.db, state.sealer, at_ms=start)
    assert await judge.round(state.db, state.sealer, at_ms=start + 2 * WINDOW_MS) == 2
    fired = await _fired(state, account.account_id)
    assert [(name, count, aggregate["bytes"]) for name, count, aggregate in fired] == [
        ("errors arm", 3, 3),
        ("whole route", 8, 8),
    ]


async def test_a_change_alert_keeps_a_bounded_number_of_series(
    isolated_client: AppClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Series that come and go (a ``group_by`` on a request id) leave the change
    alert's memory of windows before, the oldest first."""
    monkeypatch.setattr(alert_events, "MAX_SERIES", 2)
    client = isolated_client
    state, wired, judge = await _wired_with_events(client)
    evaluation = {**_metric_change("value_change_greater", 1), "group_by": [".tags.host"]}
    await _add(client, wired, evaluation, "per host")
    await judge.refresh(state.db)
    metrics = [
        {"name": "rps", "kind": "absolute", "value": {"type": "gauge", "value": 1},
         "tags": {"host": host}}
        for host in ("a", "b", "c")
    ]  # fmt: skip
    await _post(client, wired, metrics)
    start = now_ms()
    await judge.round(state.db, state.sealer, at_ms=start)
    await judge.round(state.db, state.sealer, at_ms=start + 2 * WINDOW_MS)
    [watch] = judge._watches.values()
    kept = [json.loads(key) for key in watch.previous]
    assert kept == [["b"], ["c"]]


async def test_a_huge_aggregate_is_kept_with_its_notification_as_its_count(
    isolated_client: AppClient,
) -> None:
    client = isolated_client
    state, wired, judge = await _wired_with_events(client)
    gather = 'function gather(accum, event) { accum.blob += "x".repeat(30000); return accum }'
    evaluation = {
        "alert_type": "threshold",
        "event_type": "log",
        "operation": "CUSTOM",
        "script": gather,
        "event_timestamp": ".timestamp",
        "conditional": {
            "expressions": [{"field": ".blob", "str_operator": "exists"}],
            "logical_operation": "AND",
        },
    }
    await _add(client, wired, evaluation, "gatherer")
    await judge.refresh(state.db)
    await _post(client, wired, [{"blob": ""}] * 4)
    start = now_ms()
    await judge.round(state.db, state.sealer, at_ms=start)
    assert await judge.round(state.db, state.sealer, at_ms=start + 2 * WINDOW_MS) == 1
    [(name, count, aggregate)] = await _fired(state, wired.account.account_id)
    assert (name, count, aggregate) == ("gatherer", 4, {"event_count": 4})

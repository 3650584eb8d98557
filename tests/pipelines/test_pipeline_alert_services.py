"""What a pipeline alert's service sets is what it delivers (the provider's docs): the
``log_analysis`` service writes a line into the account's own log store
(alerts/integrations/log_analysis.py); Slack posts ``message_text``; PagerDuty takes
``summary``, ``severity``, ``source`` and ``event_action``, one incident per alert. In
process, the evaluator called past the window's end, then the outbox's delivery pass
(to real local receivers for Slack and PagerDuty)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from tests.alerts.receivers import HttpReceiver
from tests.conftest import AppClient
from tests.export.helpers import app_state_of, export_all
from tests.gateway.factories import new_account
from tests.keys.factories import with_service_key
from tests.pipelines.factories import make_pipeline, source_with_route
from tests.pipelines.test_pipeline_alert_windows import _evaluate, _flush, _past_window
from tests.pipelines.test_pipeline_alerts import absence_body

from tidegate.alerts.notification import Notification
from tidegate.alerts.outbox import Outbox
from tidegate.clock import now_ms
from tidegate.models import AlertDelivery
from tidegate.models.pipeline_usage import BUCKET_MS


def _threshold_to(pid: str, cid: str, service: dict[str, Any]) -> dict[str, Any]:
    """More than 9 events in a 1-minute window, told to ``service``."""
    body = absence_body(pid, cid)
    body["alert_config"]["general"]["name"] = "busy source"
    body["alert_config"]["evaluation"] = {
        "alert_type": "threshold",
        "event_type": "log",
        "operation": "SUM",
        "window_duration_minutes": 1,
        "conditional": {
            "expressions": [{"field": ".event_count", "str_operator": "greater", "value": 9}],
            "logical_operation": "AND",
        },
    }
    body["alert_config"]["alert_payload"]["service"] = service
    return body


async def _deliver(
    client: AppClient, at_ms: int, *, with_store: bool = True, **settings: Any
) -> Any:
    """One delivery pass at ``at_ms`` (the evaluator's clock: a firing is due then),
    with ``settings`` changed."""
    state = app_state_of(client)
    outbox = Outbox(
        state.db,
        state.sealer,
        state.settings.model_copy(update=settings),
        clock=lambda: at_ms,
        intake=state.intake if with_store else None,
    )
    try:
        return await outbox.deliver_due()
    finally:
        await outbox.close()


async def _fired(client: AppClient, account: Any, service: dict[str, Any]) -> tuple[str, int, int]:
    """A threshold alert on a new pipeline's source told to ``service``, 30 events in its
    window, judged past its end: (pipeline id, window opened by, fired at)."""
    state = app_state_of(client)
    pid = await make_pipeline(client, account)
    _, cid = await source_with_route(client, account, pid)
    response = await client.post(
        f"/v3/pipeline/{pid}/source/{cid}/alert",
        json=_threshold_to(pid, cid, service),
        headers=account.headers,
    )
    assert response.status_code == 201, response.text
    made = now_ms()
    await _flush(state, account.account_id, pid, cid, made - made % BUCKET_MS, 30)
    fired_at = _past_window(made, state)
    assert await _evaluate(state, fired_at) == 1
    return pid, made, fired_at


async def test_a_firing_is_a_line_in_the_accounts_own_logs(isolated_client: AppClient) -> None:
    client = isolated_client
    account = await with_service_key(client, await new_account(client))
    stranger = await with_service_key(client, await new_account(client))
    service = {
        "name": "log_analysis",
        "ingestion_key": "abc123",
        "severity": "WARNING",
        "subject": "Too many events: {{count}}",
        "body": "The source of pipeline {{name}} is busy",
    }
    pid, made, fired_at = await _fired(client, account, service)
    result = await _deliver(client, fired_at)
    assert (result.delivered, result.failed) == (1, 0)
    window = {"from": made // 1000 - 60, "to": fired_at // 1000 + 60}
    lines, _ = await export_all(client, account.headers, **window)
    [line] = lines
    assert line["_line"] == "Too many events: 30: The source of pipeline busy source is busy"
    assert line["level"] == "WARNING"
    assert line["_app"] == "pipeline-alerts"
    assert line["_host"] == "tidegate"
    assert line["_ts"] == fired_at
    assert line["_meta"]["alert"]["name"] == "busy source"
    assert line["_meta"]["alert"]["count"] == 30
    assert line["_meta"]["alert"]["url"].endswith(f"/pipelines/{pid}?account={account.account_id}")
    # Searchable as any line, by its app and its meta.
    found, _ = await export_all(
        client, account.headers, query='app:pipeline-alerts alert.name:"busy source"', **window
    )
    assert [item["_line"] for item in found] == [line["_line"]]
    # Another account's logs hold nothing of it.
    assert (await export_all(client, stranger.headers, **window))[0] == []


async def test_without_a_log_store_the_delivery_fails_with_a_reason(
    isolated_client: AppClient,
) -> None:
    client = isolated_client
    state = app_state_of(client)
    account = await with_service_key(client, await new_account(client))
    service = {"name": "log_analysis", "ingestion_key": "abc123"}
    _, _, fired_at = await _fired(client, account, service)
    result = await _deliver(client, fired_at, with_store=False)
    assert (result.delivered, result.failed) == (0, 1)
    async with state.db.read_sessions() as session:
        [row] = (
            await session.scalars(
                select(AlertDelivery).where(AlertDelivery.account_id == account.account_id)
            )
        ).all()
    assert row.integration == "log_analysis"
    assert row.status == "failed"
    assert row.last_error == "no log store to write the alert's line to"


async def test_slack_and_pagerduty_say_what_the_service_sets(isolated_client: AppClient) -> None:
    client = isolated_client
    account = await with_service_key(client, await new_account(client))
    slack_service = {
        "name": "slack",
        "uri": "https://hooks.slack.com/services/T0/B0/X",
        # The platform's templates name the aggregate's fields with a leading dot.
        "message_text": "{{name}}: {{count}} events, {{.byte_count}} bytes",
    }
    pager_service = {
        "name": "pager_duty",
        "uri": "https://events.pagerduty.com/v2/enqueue",
        "routing_key": "rk-1",
        "summary": "Busy: {{count}} events",
        "severity": "WARNING",
        "source": "edge-pipeline",
        "event_action": "trigger",
    }
    async with HttpReceiver() as slack, HttpReceiver() as pagerduty:
        _, _, slack_at = await _fired(client, account, slack_service)
        _, _, first_at = await _fired(client, account, pager_service)
        _, _, second_at = await _fired(client, account, pager_service)
        result = await _deliver(
            client,
            max(slack_at, first_at, second_at),
            slack_base_url=f"{slack.base_url}/",
            pagerduty_events_url=f"{pagerduty.base_url}/v2/enqueue",
        )
        assert (result.delivered, result.failed) == (3, 0)
    [posted] = slack.requests
    assert posted.path == "/services/T0/B0/X"
    assert posted.json()["text"] == "busy source: 30 events, 3000 bytes"
    events = [request.json() for request in pagerduty.requests]
    assert len(events) == 2
    for event in events:
        assert event["routing_key"] == "rk-1"
        assert event["event_action"] == "trigger"
        assert event["payload"]["summary"] == "Busy: 30 events"
        assert event["payload"]["severity"] == "warning"
        assert event["payload"]["source"] == "edge-pipeline"
    # One incident per alert: two alerts are two dedup keys, neither an index rate's.
    keys = {event["dedup_key"] for event in events}
    assert len(keys) == 2
    assert not any(key.endswith("index-rate") for key in keys)


def _pipeline_notification(**fields: Any) -> Notification:
    return Notification(event="trigger", source="pipeline", account_id="a", fired_ms=0, **fields)


def test_a_pipeline_alerts_default_summary_names_it_and_its_window() -> None:
    notification = _pipeline_notification(
        name="busy source",
        count=30,
        detail="threshold alert on source s of pipeline p: 30 events in the window",
    )
    assert notification.summary() == (
        "Pipeline alert 'busy source': threshold alert on source s of pipeline p: "
        "30 events in the window"
    )


def test_placeholders_name_an_aggregates_fields_to_a_bounded_depth() -> None:
    deep: dict[str, Any] = {}
    inner = deep
    for _ in range(500):  # deeper than Python's recursion would take unbounded
        inner["a"] = {}
        inner = inner["a"]
    notification = _pipeline_notification(
        name="n", count=1, aggregate={"event_count": 3, "host": {"name": "web-1"}, "deep": deep}
    )
    values = notification.placeholders("")
    assert values[".event_count"] == 3
    assert values[".host.name"] == "web-1"
    assert ".deep" + ".a" * 16 in values
    assert ".deep" + ".a" * 17 not in values

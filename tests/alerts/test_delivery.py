"""Delivery through the outbox to real receivers started by the test: webhook (method,
headers, template), Slack, PagerDuty, e-mail over SMTP, retries with backoff, and the
delivery log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.alerts.harness import Harness, mailing, open_harness
from tests.alerts.receivers import HttpReceiver, SmtpReceiver
from tests.waiting import eventually


async def fire(harness: Harness, channel: dict[str, Any], *lines: str) -> str:
    """A view whose channel fires on the first matching line; the lines ingested and
    evaluated. Returns the view id."""
    view_id = await harness.view(
        [{"triggerlimit": 1, "immediate": "true", "triggerinterval": "30", **channel}]
    )
    evaluator = harness.main_evaluator()
    await evaluator.evaluate()
    await harness.ingest(*lines)
    harness.clock.move(1)
    assert (await evaluator.evaluate()).firings >= 1
    return view_id


async def test_webhook_with_template_and_the_delivery_log(
    own_database: str, tmp_path: Path
) -> None:
    async with HttpReceiver() as receiver:
        harness = await open_harness(own_database, tmp_path)
        try:
            template = {
                "text": "{{name}} matched {{count}} at {{time}}",
                "lines": "{{lines}}",
                "first": "{{firstLine}}",
                "nested": {"{{event}}": ["{{query}}", "{{triggerlimit}}"]},
                "unknown": "{{nope}}",
            }
            view_id = await fire(
                harness,
                {
                    "integration": "webhook",
                    "url": f"{receiver.base_url}/alert?x=1",
                    "method": "put",  # kept as sent, sent as PUT
                    "headers": {"X-Token": "s3cret"},
                    "bodyTemplate": template,
                    "timezone": "Europe/Paris",
                },
                "payment failed: card declined",
            )
            result = await harness.outbox().deliver_due()
            assert result.delivered == 1
            [request] = receiver.requests
            assert request.method == "PUT"
            assert request.path == "/alert?x=1"
            assert request.headers["x-token"] == "s3cret"
            body = request.json()
            assert body["text"].startswith("Payments errors matched 1 at ")
            assert body["text"].endswith("+01:00")  # in the channel's time zone
            assert [item["_line"] for item in body["lines"]] == ["payment failed: card declined"]
            assert body["first"] == "payment failed: card declined"
            assert body["nested"] == {"trigger": ["payment failed", 1]}
            assert body["unknown"] == "{{nope}}"
            log = await harness.client.get(
                f"/v1/config/view/{view_id}/alerts", headers=harness.who.account.headers
            )
            assert log.status_code == 200
            [entry] = log.json()
            assert entry["status"] == "delivered"
            assert entry["attempts"] == 1
            assert entry["integration"] == "webhook"
            assert entry["event"] == "trigger"
            assert entry["count"] == 1
            assert [line["_line"] for line in entry["lines"]] == ["payment failed: card declined"]
            assert isinstance(entry["finished"], int)
            # Delivered rows are not sent again.
            assert (await harness.outbox().deliver_due()).delivered == 0
            assert len(receiver.requests) == 1
        finally:
            await harness.close()


async def test_retries_with_backoff_then_success_and_final_failures(
    own_database: str, tmp_path: Path
) -> None:
    async with HttpReceiver(script=[503, 500, 200]) as flaky, HttpReceiver(script=[404]) as gone:
        harness = await open_harness(own_database, tmp_path, alert_delivery_backoff_s=2)
        try:
            await fire(
                harness, {"integration": "webhook", "url": f"{flaky.base_url}/a"}, "payment failed"
            )
            outbox = harness.outbox()
            first = await outbox.deliver_due()
            assert first.retried == 1
            assert (await outbox.deliver_due()).retried == 0  # not due before the backoff
            harness.clock.move(1.9)
            assert (await outbox.deliver_due()).retried == 0
            harness.clock.move(0.1)  # 2 s after the first attempt
            assert (await outbox.deliver_due()).retried == 1
            harness.clock.move(3.9)  # the second retry waits 4 s
            assert (await outbox.deliver_due()).delivered == 0
            harness.clock.move(0.1)
            assert (await outbox.deliver_due()).delivered == 1
            assert len(flaky.requests) == 3
            [delivered] = await harness.deliveries()
            assert delivered.attempts == 3
            assert delivered.status == "delivered"

            await fire(
                harness, {"integration": "webhook", "url": f"{gone.base_url}/b"}, "payment failed"
            )
            result = await outbox.deliver_due()
            assert result.failed == 1  # a 404 is final
            failed = [row for row in await harness.deliveries() if row.status == "failed"]
            assert failed[0].last_error == "answered 404"
            assert failed[0].attempts == 1
            await outbox.close()
        finally:
            await harness.close()


async def test_attempts_are_bounded(own_database: str, tmp_path: Path) -> None:
    async with HttpReceiver(script=[500]) as broken:
        harness = await open_harness(
            own_database, tmp_path, alert_delivery_attempts=3, alert_delivery_backoff_s=1
        )
        try:
            await fire(
                harness, {"integration": "webhook", "url": broken.base_url}, "payment failed"
            )
            outbox = harness.outbox()
            for _ in range(10):
                await outbox.deliver_due()
                harness.clock.move(10)
            assert len(broken.requests) == 3
            [row] = await harness.deliveries()
            assert row.status == "failed"
            assert row.attempts == 3
            await outbox.close()
        finally:
            await harness.close()


async def test_slack_and_pagerduty_go_to_the_configured_urls(
    own_database: str, tmp_path: Path
) -> None:
    async with HttpReceiver() as slack, HttpReceiver() as pagerduty:
        harness = await open_harness(
            own_database,
            tmp_path,
            slack_base_url=f"{slack.base_url}/",
            pagerduty_events_url=f"{pagerduty.base_url}/v2/enqueue",
        )
        try:
            await harness.view(
                [
                    {
                        "integration": "slack",
                        "url": "https://hooks.slack.com/services/T000/B000/XXXX",
                        "triggerlimit": 1,
                        "immediate": "true",
                    },
                    {
                        "integration": "pagerduty",
                        "key": "routing-key-1",
                        "triggerlimit": 1,
                        "immediate": "true",
                        "autoresolve": True,
                        "autoresolveinterval": "30",
                        "autoresolvelimit": 1,
                    },
                ]
            )
            evaluator = harness.evaluator()
            await evaluator.evaluate()
            await harness.ingest("payment failed: timeout")
            harness.clock.move(1)
            assert (await evaluator.evaluate()).firings == 2
            assert (await harness.outbox().deliver_due()).delivered == 2
            [posted] = slack.requests
            assert posted.method == "POST"
            assert posted.path == "/services/T000/B000/XXXX"
            message = posted.json()
            assert "Payments errors" in message["text"]
            assert "payment failed: timeout" in message["attachments"][0]["text"]
            [trigger] = pagerduty.requests
            assert trigger.path == "/v2/enqueue"
            event = trigger.json()
            assert event["routing_key"] == "routing-key-1"
            assert event["event_action"] == "trigger"
            assert event["payload"]["severity"] == "error"
            assert "Payments errors" in event["payload"]["summary"]
            # 30 s with no matching line: resolved, under the same dedup key.
            harness.clock.move(40)
            assert (await evaluator.evaluate()).firings == 1
            assert (await harness.outbox().deliver_due()).delivered == 1
            resolve = pagerduty.requests[-1].json()
            assert resolve["event_action"] == "resolve"
            assert resolve["dedup_key"] == event["dedup_key"]
            assert resolve["routing_key"] == "routing-key-1"
        finally:
            await harness.close()


async def test_email_through_smtp(own_database: str, tmp_path: Path) -> None:
    with SmtpReceiver() as smtp:
        harness = await open_harness(own_database, tmp_path, **mailing(smtp.port))
        try:
            await fire(
                harness,
                {"integration": "email", "emails": ["ops@example.com", "dev@example.com"]},
                "payment failed: insufficient funds",
            )
            assert (await harness.outbox().deliver_due()).delivered == 1

            def alerts() -> list[Any]:
                # Other mail may pass too (the account owner's invitation).
                return [item for item in smtp.messages if "Payments errors" in item[2]["Subject"]]

            await eventually(alerts, what="the alert's e-mail at the SMTP receiver")
            [(sender, recipients, message)] = alerts()
            assert sender == "alerts@tidegate.test"
            assert sorted(recipients) == ["dev@example.com", "ops@example.com"]
            assert "Payments errors" in message["Subject"]
            body = message.get_content()
            assert "payment failed: insufficient funds" in body
        finally:
            await harness.close()


async def test_email_without_smtp_fails_visibly(own_database: str, tmp_path: Path) -> None:
    harness = await open_harness(own_database, tmp_path)
    try:
        view_id = await fire(
            harness, {"integration": "email", "emails": ["ops@example.com"]}, "payment failed"
        )
        assert (await harness.outbox().deliver_due()).failed == 1
        log = await harness.client.get(
            f"/v1/config/view/{view_id}/alerts", headers=harness.who.account.headers
        )
        [entry] = log.json()
        assert entry["status"] == "failed"
        assert "SMTP" in entry["last_error"]
        assert json.dumps(entry)  # plain JSON
    finally:
        await harness.close()

"""PagerDuty Events API v2: ``trigger`` when an alert fires, ``resolve`` when it
resolves, with one ``dedup_key`` per channel so the resolve closes the incident."""

from __future__ import annotations

from typing import Any

from tidegate.alerts.channels import Channel
from tidegate.alerts.integrations.base import SendContext, post_json
from tidegate.alerts.notification import Notification
from tidegate.kit.destination_guard import DestinationPolicy


def pagerduty_body(channel: Channel, notification: Notification, dedup_key: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "routing_key": channel.key,
        "event_action": "resolve" if notification.event == "resolve" else "trigger",
        "dedup_key": dedup_key,
    }
    if notification.event != "resolve":
        body["payload"] = {
            "summary": notification.summary(channel.timezone)[:1024],
            "source": "tidegate",
            "severity": "error",
            "timestamp": notification.time_text(""),
            "custom_details": {
                "view": notification.name,
                "query": notification.query,
                "count": notification.count,
                "lines": notification.lines_text(),
            },
        }
        if notification.url:
            body["links"] = [{"href": notification.url, "text": "View in tidegate"}]
    return body


class PagerDuty:
    name = "pagerduty"

    async def vet(self, channel: Channel, *, policy: DestinationPolicy, where: str) -> None:
        return None

    async def send(
        self, channel: Channel, notification: Notification, context: SendContext
    ) -> None:
        dedup = f"tidegate-{notification.account_id}-{notification.view_id or 'index-rate'}"
        await post_json(
            context.trusted,
            context.settings.pagerduty_events_url,
            body=pagerduty_body(channel, notification, dedup),
        )

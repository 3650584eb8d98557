"""PagerDuty Events API v2: ``trigger`` when an alert fires, ``resolve`` when it
resolves, with one ``dedup_key`` per channel so the resolve closes the incident."""

from __future__ import annotations

from typing import Any

from tidegate.alerts.channels import Channel
from tidegate.alerts.integrations.base import SendContext, post_json
from tidegate.alerts.notification import Notification
from tidegate.kit.destination_guard import DestinationPolicy


def pagerduty_body(channel: Channel, notification: Notification, dedup_key: str) -> dict[str, Any]:
    """The Events API v2 body. A pipeline alert's service may set ``summary``,
    ``severity`` (INFO, WARNING, ERROR, CRITICAL: PagerDuty's in lower case),
    ``source`` and ``event_action`` (kept in its channel's ``body_template``)."""
    parts = channel.body_template or {}
    action = "resolve" if notification.event == "resolve" else "trigger"
    action = str(parts.get("event_action") or action).lower()
    body: dict[str, Any] = {
        "routing_key": channel.key,
        "event_action": action,
        "dedup_key": dedup_key,
    }
    if action == "trigger":
        summary = notification.service_text(parts, "summary", channel.timezone)
        body["payload"] = {
            "summary": (summary or notification.summary(channel.timezone))[:1024],
            "source": str(parts.get("source") or "tidegate")[:255],
            "severity": str(parts.get("severity") or "error").lower(),
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
        # One incident per view, per pipeline alert, and one for an account's index rate.
        subject = notification.view_id or (
            f"pipeline-{notification.alert_id}" if notification.alert_id else "index-rate"
        )
        dedup = f"tidegate-{notification.account_id}-{subject}"
        await post_json(
            context.trusted,
            context.settings.pagerduty_events_url,
            body=pagerduty_body(channel, notification, dedup),
        )

"""Slack incoming webhooks: ``{"text", "attachments"}`` JSON.

A channel URL on Slack's own host (``https://hooks.slack.com/services/...``) or a bare
path (``/services/...``) is posted to ``TIDEGATE_SLACK_BASE_URL`` + that path (and
query), so air-gapped installs and tests can point Slack elsewhere. Any other full URL
(a Slack-compatible receiver such as Mattermost) is used as it is, through the
destination guard like a webhook."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from tidegate.alerts.channels import Channel
from tidegate.alerts.integrations.base import SendContext, post_json, vet_http_url
from tidegate.alerts.notification import Notification
from tidegate.kit.destination_guard import DestinationPolicy

SLACK_HOST = "hooks.slack.com"


def _on_slack(url: str) -> str | None:
    """The path and query to append to the Slack base URL, or None for another host."""
    if url.startswith("/"):
        return url
    parts = urlsplit(url)
    if (parts.hostname or "").lower() == SLACK_HOST:
        return parts.path + (f"?{parts.query}" if parts.query else "")
    return None


def slack_body(channel: Channel, notification: Notification) -> dict[str, Any]:
    color = "good" if notification.event == "resolve" else "danger"
    # A pipeline alert's ``message_text`` when its service set one.
    text = notification.service_text(
        channel.body_template, "message_text", channel.timezone
    ) or notification.summary(channel.timezone)
    fields = [
        {"title": "Query", "value": notification.query or "(everything)", "short": True},
        {"title": "Lines", "value": str(notification.count), "short": True},
        {"title": "Time", "value": notification.time_text(channel.timezone), "short": False},
    ]
    sample = notification.lines_text()
    return {
        "text": text,
        "attachments": [
            {
                "fallback": text,
                "color": color,
                "title": notification.name,
                "title_link": notification.url or None,
                "text": f"```{sample[:3000]}```" if sample else "",
                "fields": fields,
            }
        ],
    }


class Slack:
    name = "slack"

    async def vet(self, channel: Channel, *, policy: DestinationPolicy, where: str) -> None:
        if _on_slack(channel.url) is None:
            await vet_http_url(channel.url, policy=policy, where=where)

    async def send(
        self, channel: Channel, notification: Notification, context: SendContext
    ) -> None:
        path = _on_slack(channel.url)
        body = slack_body(channel, notification)
        if path is None:
            await post_json(context.guarded, channel.url, body=body)
            return
        base = context.settings.slack_base_url.rstrip("/")
        await post_json(context.trusted, base + path, body=body)

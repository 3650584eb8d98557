"""Webhooks: the channel's method, headers and body template (placeholders filled in,
docs/alerts.md), or a default JSON body, to the channel's URL through the guard."""

from __future__ import annotations

from typing import Any

from tidegate.alerts.channels import Channel
from tidegate.alerts.integrations.base import SendContext, post_json, vet_http_url
from tidegate.alerts.notification import Notification, render_template
from tidegate.kit.destination_guard import DestinationPolicy


def webhook_body(channel: Channel, notification: Notification) -> Any:
    values = notification.placeholders(channel.timezone)
    if channel.body_template is None:
        return {**notification.as_payload(), "summary": values["summary"], "time": values["time"]}
    return render_template(channel.body_template, values)


class Webhook:
    name = "webhook"

    async def vet(self, channel: Channel, *, policy: DestinationPolicy, where: str) -> None:
        await vet_http_url(channel.url, policy=policy, where=where)

    async def send(
        self, channel: Channel, notification: Notification, context: SendContext
    ) -> None:
        body = None if channel.http_method == "GET" else webhook_body(channel, notification)
        await post_json(
            context.guarded,
            channel.url,
            method=channel.http_method,
            body=body,
            headers=channel.headers,
        )

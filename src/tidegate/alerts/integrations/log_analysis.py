"""``log_analysis``: a pipeline alert's notification written as a log line into the
account's own log store (the mezmo provider's ``log_analysis`` service: ``subject``,
``body``, ``severity``, ``ingestion_key``).

The line goes through the worker's one writer of lines (``logs.intake``), as the
``mezmo`` pipeline destination's do: the account's exclusion rules, usage, the group
commit, live tail. **Decision** (the destination's): it goes to the alert's own account;
``ingestion_key`` is stored, read back and not used (there is no other platform to send
to). The line (docs/api-pipelines.md, "Delivery"):

- text: ``subject: body`` (either alone when the other is not set; the alert's name when
  neither is), placeholders filled as in webhook templates (``{{name}}``, ``{{count}}``);
- ``level`` the severity as sent (``INFO``, ``WARNING``, ``ERROR``, ``CRITICAL``), ``app``
  ``pipeline-alerts``, ``host`` ``tidegate``, at the firing's time;
- ``meta.alert``: ``name``, ``count``, ``detail`` and ``url`` (the pipeline's page).

Only pipeline alerts make such channels (``pipeline_alerts.channel_of``): the views'
channel bodies cannot name this integration.
"""

from __future__ import annotations

from typing import Any, Final

from tidegate.alerts.channels import Channel
from tidegate.alerts.integrations.base import SendContext
from tidegate.alerts.notification import Notification
from tidegate.delivery import DeliveryFailed
from tidegate.kit.destination_guard import DestinationPolicy
from tidegate.logs.intake import judge_lines
from tidegate.logs.log_lines import event_to_line

APP: Final = "pipeline-alerts"
HOST: Final = "tidegate"


def log_analysis_channel(service: dict[str, Any]) -> Channel:
    """The stored channel of a provider ``log_analysis`` service: its line's parts in
    the body template (the channel has no fields of its own for them)."""
    return Channel(
        integration="log_analysis",
        operator="presence",
        triggerinterval="30",
        triggerlimit=1,
        body_template={
            name: service[name] for name in ("subject", "body", "severity") if service.get(name)
        },
    )


def alert_event(channel: Channel, notification: Notification) -> dict[str, Any]:
    """The line's event (``logs.log_lines.event_to_line``'s input)."""
    parts = channel.body_template or {}
    subject, body = (
        notification.service_text(parts, name, channel.timezone) for name in ("subject", "body")
    )
    text = f"{subject}: {body}" if subject and body else subject or body
    event: dict[str, Any] = {
        "line": text or f"Pipeline alert '{notification.name}'",
        "app": APP,
        "host": HOST,
        "timestamp": notification.fired_ms,
        "meta": {
            "alert": {
                "name": notification.name,
                "count": notification.count,
                "detail": notification.detail,
                "url": notification.url,
            }
        },
    }
    if parts.get("severity"):
        event["level"] = str(parts["severity"])
    return event


class LogAnalysis:
    name = "log_analysis"

    async def vet(self, channel: Channel, *, policy: DestinationPolicy, where: str) -> None:
        """Nothing to reach: the line is stored by this server."""

    async def send(
        self, channel: Channel, notification: Notification, context: SendContext
    ) -> None:
        intake = context.intake
        if intake is None:  # an outbox built without the log store (not the server's)
            raise DeliveryFailed("no log store to write the alert's line to", retry=False)
        received_ms = context.clock()
        line = event_to_line(
            alert_event(channel, notification), received_ms=received_ms, default_host=HOST
        )
        judged = judge_lines(
            account_id=notification.account_id,
            lines=[line],
            rules=await intake.rules_for(notification.account_id),
            received_ms=received_ms,
        )
        await intake.store([judged])

"""The registry of alert integrations: name -> its check and its sender. Callers ask
the registry; nobody switches on integration names."""

from __future__ import annotations

from tidegate.alerts.channels import Channel, ChannelIn, canonical_channel
from tidegate.alerts.integrations.base import Integration, SendContext
from tidegate.alerts.integrations.email import Email
from tidegate.alerts.integrations.log_analysis import LogAnalysis
from tidegate.alerts.integrations.pagerduty import PagerDuty
from tidegate.alerts.integrations.slack import Slack
from tidegate.alerts.integrations.webhook import Webhook
from tidegate.errors import BadRequest
from tidegate.kit.destination_guard import DestinationPolicy

INTEGRATIONS: dict[str, Integration] = {
    integration.name: integration
    for integration in (Email(), Webhook(), Slack(), PagerDuty(), LogAnalysis())
}


async def checked_channels(
    channels: list[ChannelIn], *, policy: DestinationPolicy, where: str = "channels"
) -> list[Channel]:
    """The canonical channels, each checked by its integration (a webhook URL that
    targets a non-public address is refused); a 400 naming the channel otherwise."""
    result = []
    for position, body in enumerate(channels):
        place = f"{where}.{position}"
        try:
            channel = canonical_channel(body, where=place)
            await INTEGRATIONS[channel.integration].vet(channel, policy=policy, where=place)
        except ValueError as error:
            raise BadRequest(str(error)) from None
        result.append(channel)
    return result


__all__ = ["INTEGRATIONS", "Integration", "SendContext", "checked_channels"]

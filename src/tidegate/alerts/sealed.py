"""Channels are stored sealed: they carry credentials (PagerDuty routing keys, Slack
webhook URLs, webhook headers), so the database alone does not reveal them."""

from __future__ import annotations

import json

from tidegate.alerts.channels import Channel
from tidegate.auth.secrets import Sealer


def seal_channels(sealer: Sealer, channels: list[Channel]) -> str | None:
    if not channels:
        return None
    return sealer.seal(json.dumps([channel.stored() for channel in channels]))


def open_channels(sealer: Sealer, sealed: str | None) -> list[Channel]:
    """The channels; none when there are none or the server secret changed (a sealed
    value that no longer opens cannot be used, and is not an error to show)."""
    if not sealed:
        return []
    text = sealer.open_stored(sealed)
    if text is None:
        return []
    return [Channel.from_stored(item) for item in json.loads(text)]


def seal_channel(sealer: Sealer, channel: Channel) -> str:
    return sealer.seal(json.dumps(channel.stored()))


def open_channel(sealer: Sealer, sealed: str) -> Channel | None:
    text = sealer.open(sealed)
    return None if text is None else Channel.from_stored(json.loads(text))

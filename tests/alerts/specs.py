"""A watched view for calling the matcher (`alerts.matching.evaluate_batch`) directly."""

from __future__ import annotations

from tidegate.alerts.channels import Channel
from tidegate.alerts.matching import ViewSpec


def presence_view(*, account_id: str, query: str, triggerlimit: int) -> ViewSpec:
    """A view on ``query`` with one webhook channel firing on ``triggerlimit`` lines."""
    channel = Channel(
        integration="webhook",
        operator="presence",
        triggerinterval="30",
        triggerlimit=triggerlimit,
        immediate=True,
        url="https://example.com/",
    )
    return ViewSpec(
        view_id="v",
        account_id=account_id,
        name=query,
        query=query,
        hosts=(),
        apps=(),
        levels=(),
        tags=(),
        since_ms=0,
        channels=(("k", channel.stored()),),
    )

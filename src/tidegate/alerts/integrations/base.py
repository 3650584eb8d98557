"""What every integration (email, webhook, slack, pagerduty, log_analysis) provides: a check when a
channel is saved and a sender used by the delivery outbox."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

import httpcore
import httpx

from tidegate.alerts.channels import Channel
from tidegate.alerts.notification import Notification
from tidegate.clock import now_ms
from tidegate.config import Settings
from tidegate.delivery import DeliveryFailed
from tidegate.kit.destination_guard import DestinationPolicy, DestinationRefused

if TYPE_CHECKING:
    from tidegate.logs.intake import LineIntake


@dataclass(slots=True)
class SendContext:
    """What an integration's ``send`` is given (not a pipeline destination's
    ``components.base.DeliveryContext``: different things, different names)."""

    settings: Settings
    # Tenant-chosen URLs (webhooks, non-Slack URLs) go through the destination guard;
    # ``trusted`` reaches the operator's own settings (Slack base URL, PagerDuty).
    guarded: httpx.AsyncClient
    trusted: httpx.AsyncClient
    # The worker's writer of log lines (``log_analysis`` writes into the account's own
    # store); None in an outbox built without it.
    intake: LineIntake | None = None
    clock: Callable[[], int] = now_ms


class Integration(Protocol):
    name: str

    async def vet(self, channel: Channel, *, policy: DestinationPolicy, where: str) -> None:
        """``ValueError`` naming ``where`` when the channel cannot be delivered to."""

    async def send(
        self, channel: Channel, notification: Notification, context: SendContext
    ) -> None:
        """Deliver once; ``DeliveryFailed`` when it did not succeed."""


async def vet_http_url(url: str, *, policy: DestinationPolicy, where: str) -> None:
    """An http(s) URL whose host is not, and does not now resolve to, an address the
    operator did not allow (the pipeline http destination's rule). A name that does
    not resolve yet is accepted: every connection is vetted again."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{where}.url: must be an http or https URL")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise ValueError(f"{where}.url: the port is not a number") from None
    try:
        await policy.resolve(parts.hostname, port)
    except DestinationRefused as error:
        raise ValueError(f"{where}.url: must not target a non-public address: {error}") from None
    except httpcore.ConnectError:
        pass


async def post_json(
    client: httpx.AsyncClient,
    url: str,
    *,
    method: str = "POST",
    body: object = None,
    headers: dict[str, str] | None = None,
    timeout_s: float = 10.0,
) -> None:
    """One HTTP request; DeliveryFailed unless it answered 2xx. 4xx other than 408 and
    429 are final: the receiver refused this notification."""
    try:
        response = await client.request(
            method, url, json=body, headers=headers or {}, timeout=timeout_s
        )
    except DestinationRefused as error:
        raise DeliveryFailed(str(error), retry=False) from None
    except httpx.HTTPError as error:
        raise DeliveryFailed(f"{type(error).__name__}: {error}") from None
    if 200 <= response.status_code < 300:
        return
    final = 400 <= response.status_code < 500 and response.status_code not in (408, 429)
    raise DeliveryFailed(f"answered {response.status_code}", retry=not final)

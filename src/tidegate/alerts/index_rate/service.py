"""The account's index-rate alert: one per account, set with PUT (``enabled: false``
is how the provider deletes it). Stored sealed: its channels are credentials."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import Any

from pydantic import ValidationError
from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.alerts.channels import Channel, ChannelIn
from tidegate.alerts.index_rate import schemas
from tidegate.alerts.index_rate.evaluator import open_config
from tidegate.alerts.integrations import checked_channels
from tidegate.auth.secrets import Sealer
from tidegate.db.engine import Database, RawQuery
from tidegate.errors import BadRequest
from tidegate.kit.destination_guard import DestinationPolicy
from tidegate.models import IndexRateAlert


def _number(value: float | int) -> float | int:
    return int(value) if float(value).is_integer() else value


def index_rate_data(config: dict[str, Any]) -> dict[str, Any]:
    """The index-rate alert's document as plain data (api/raw_json.py), from its opened
    configuration (``evaluator.open_config``)."""
    channels = config["channels"]
    webhooks = [Channel.from_stored(item) for item in channels["webhook"]]
    return {
        "max_lines": config["max_lines"],
        "max_z_score": _number(config["max_z_score"]),
        "threshold_alert": config["threshold_alert"],
        "frequency": config["frequency"],
        "channels": {
            "email": list(channels["email"]),
            "pagerduty": list(channels["pagerduty"]),
            "slack": list(channels["slack"]),
            "webhook": [
                {
                    "url": hook.url,
                    "method": hook.method,
                    "headers": dict(hook.headers),
                    "bodyTemplate": schemas.template_text(hook.body_template),
                }
                for hook in webhooks
            ],
        },
        "enabled": config["enabled"],
    }


def config_schema(config: dict[str, Any]) -> schemas.IndexRate:
    return schemas.IndexRate(**index_rate_data(config))


# The account's sealed configuration (no row: never set, the defaults).
_CONFIG_OF = RawQuery(
    select(IndexRateAlert.config_sealed).where(IndexRateAlert.account_id == bindparam("account_id"))
)


async def read_index_rate(*, db: Database, account_id: str, sealer: Sealer) -> dict[str, Any]:
    """The account's index-rate alert as plain data, from one raw read, opened as the
    ORM path opens it (``Sealer.open``: one value a request)."""
    rows = await db.fetch_records(_CONFIG_OF, {"account_id": account_id})
    return index_rate_data(open_config(sealer, rows[0] if rows else None))


def _channel(where: str, build: Callable[[], ChannelIn]) -> ChannelIn:
    """A channel built from the index-rate body's fields; a value the channel refuses
    (a webhook method, a URL with control characters) is the caller's 400."""
    try:
        return build()
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        message = str(first["msg"]).removeprefix("Value error, ")
        raise BadRequest(
            f"{where}.{field}: {message}" if field else f"{where}: {message}"
        ) from None


async def _checked(body: schemas.IndexRateIn, policy: DestinationPolicy) -> dict[str, Any]:
    given = body.channels or schemas.ChannelsIn()
    bodies: list[ChannelIn] = []
    if given.email:
        bodies.append(
            _channel(
                "channels.email",
                lambda: ChannelIn(integration="email", emails=given.email, triggerlimit=1),
            ),
        )
    for i, url in enumerate(given.slack):
        bodies.append(
            _channel(
                f"channels.slack[{i}]",
                partial(ChannelIn, integration="slack", url=url, triggerlimit=1),
            ),
        )
    bodies += [
        _channel(f"channels.webhook[{i}]", hook.channel) for i, hook in enumerate(given.webhook)
    ]
    checked = await checked_channels(bodies, policy=policy, where="channels")
    webhooks = [channel.stored() for channel in checked if channel.integration == "webhook"]
    emails = next((c.emails for c in checked if c.integration == "email"), [])
    for key in given.pagerduty:
        if not key.strip() or len(key) > 256 or any(ord(ch) < 32 or ord(ch) == 127 for ch in key):
            raise BadRequest("channels.pagerduty: not a routing key")
    config = {
        "max_lines": body.max_lines or 0,
        "max_z_score": body.max_z_score or 0,
        "threshold_alert": body.threshold_alert or "separate",
        "frequency": body.frequency or "hourly",
        "channels": {
            "email": emails,
            "pagerduty": list(given.pagerduty),
            "slack": list(given.slack),
            "webhook": webhooks,
        },
        "enabled": body.enabled,
    }
    if body.enabled and not (config["max_lines"] or config["max_z_score"]):
        raise BadRequest("max_lines or max_z_score: an enabled alert needs a threshold")
    return config


async def put_index_rate(
    *,
    session: AsyncSession,
    account_id: str,
    body: schemas.IndexRateIn,
    sealer: Sealer,
    policy: DestinationPolicy,
) -> schemas.IndexRate:
    config = await _checked(body, policy)
    row = await session.get(IndexRateAlert, account_id, with_for_update=True)
    sealed = sealer.seal(json.dumps(config))
    if row is None:
        session.add(
            IndexRateAlert(
                account_id=account_id, config_sealed=sealed, enabled=body.enabled, state={}
            )
        )
    else:
        previous = open_config(sealer, row)
        row.config_sealed = sealed
        row.enabled = body.enabled
        if previous.get("frequency") != config["frequency"] or not body.enabled:
            row.state = {}  # a new frequency (or a disabled alert) starts its samples anew
    await session.flush()
    return config_schema(config)

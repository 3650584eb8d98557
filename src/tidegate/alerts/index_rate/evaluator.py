"""Evaluating index-rate alerts on the account's real ingestion volume.

The volume is read from the usage table (``account_usage.lines_stored``, which every
writer of lines adds to in the transaction that stores them): at each period boundary
(hour or UTC day) the account's running total is sampled, and the period's lines are
the difference from the previous sample. The alert fires when the period's lines
exceed ``max_lines``, or lie more than ``max_z_score`` standard deviations above the
mean of the previous periods (at least MIN_SAMPLES of them), either one
(``separate``) or all configured ones (``both``)."""

from __future__ import annotations

import json
import math
from typing import Any

from sqlalchemy import func, select

from tidegate.alerts.channels import Channel
from tidegate.alerts.notification import Notification, app_link
from tidegate.alerts.outbox import pending_delivery
from tidegate.auth.secrets import Sealer
from tidegate.config import Settings
from tidegate.db.engine import Database
from tidegate.models import AccountUsage, AlertDelivery, IndexRateAlert

PERIOD_MS = {"hourly": 3_600_000, "daily": 86_400_000}
KEPT_SAMPLES = {"hourly": 168, "daily": 30}
MIN_SAMPLES = 3

# An account's alert before it sets one (read when it has no row).
DEFAULTS: dict[str, Any] = {
    "max_lines": 0,
    "max_z_score": 0,
    "threshold_alert": "separate",
    "frequency": "hourly",
    "channels": {"email": [], "pagerduty": [], "slack": [], "webhook": []},
    "enabled": False,
}


def open_config(sealer: Sealer, row: IndexRateAlert | Any | None) -> dict[str, Any]:
    """The configuration opened, from the ORM object or a raw record holding
    ``config_sealed``; the defaults when never set (no row)."""
    text = sealer.open(row.config_sealed) if row is not None else None
    config: dict[str, Any] = json.loads(text if text is not None else json.dumps(DEFAULTS))
    return config


def exceeded(config: dict[str, Any], count: int, samples: list[int]) -> tuple[bool, str]:
    """Whether ``count`` lines in a period fires, and why (for the notification)."""
    checks: list[tuple[bool, str]] = []
    max_lines = int(config.get("max_lines") or 0)
    if max_lines > 0:
        checks.append((count > max_lines, f"{count} lines (max_lines {max_lines})"))
    max_z = float(config.get("max_z_score") or 0)
    if max_z > 0:
        z = z_score(count, samples)
        if z is not None:
            checks.append((z > max_z, f"z-score {z:.2f} (max_z_score {max_z:g})"))
    if not checks:
        return False, ""
    hits = [reason for hit, reason in checks if hit]
    fire = bool(hits) and (config.get("threshold_alert") != "both" or len(hits) == len(checks))
    return fire, "; ".join(hits)


def z_score(count: int, samples: list[int]) -> float | None:
    if len(samples) < MIN_SAMPLES:
        return None
    mean = sum(samples) / len(samples)
    deviation = math.sqrt(sum((item - mean) ** 2 for item in samples) / len(samples))
    if deviation == 0:
        return math.inf if count > mean else 0.0
    return (count - mean) / deviation


def targets(config: dict[str, Any]) -> list[Channel]:
    """The channels to notify: one per e-mail list, routing key, Slack URL, webhook."""
    channels = config["channels"]

    def target(integration: str) -> Channel:
        return Channel(
            integration=integration, operator="presence", triggerinterval="30", triggerlimit=1
        )

    found: list[Channel] = []
    if channels["email"]:
        email = target("email")
        email.emails = list(channels["email"])
        found.append(email)
    for key in channels["pagerduty"]:
        pagerduty = target("pagerduty")
        pagerduty.key = key
        found.append(pagerduty)
    for url in channels["slack"]:
        slack = target("slack")
        slack.url = url
        found.append(slack)
    found += [Channel.from_stored(item) for item in channels["webhook"]]
    return found


async def evaluate_index_rates(
    db: Database,
    sealer: Sealer,
    settings: Settings,
    *,
    now_ms: int,
) -> int:
    """One pass over the enabled alerts; how many fired."""
    fired = 0
    async with db.read_sessions() as session:
        rows = list(
            (
                await session.execute(
                    select(IndexRateAlert).where(IndexRateAlert.enabled.is_(True))
                )
            ).scalars()
        )
    for row in rows:
        config = open_config(sealer, row)
        frequency = config.get("frequency", "hourly")
        period = now_ms // PERIOD_MS[frequency]
        seen = row.state or {}
        if seen.get("frequency") == frequency and seen.get("period", -1) >= period:
            continue  # this period was sampled: no write transaction
        async with db.write_sessions() as session:
            # Locked (SQLite: the write transaction) and read again: a concurrent pass
            # that already sampled this period wins, this one changes nothing.
            current = await session.get(
                IndexRateAlert, row.account_id, with_for_update=True, populate_existing=True
            )
            if current is None or not current.enabled:
                continue
            state = dict(current.state or {})
            if state.get("frequency") == frequency and state.get("period", period) >= period:
                continue
            total = int(
                (
                    await session.execute(
                        select(func.coalesce(func.sum(AccountUsage.lines_stored), 0)).where(
                            AccountUsage.account_id == row.account_id
                        )
                    )
                ).scalar_one()
            )
            samples: list[int] = []
            if state.get("frequency") == frequency:
                count = total - int(state["total"])
                samples = list(state.get("samples", []))
                fire, reason = exceeded(config, count, samples)
                if fire:
                    fired += 1
                    for channel in targets(config):
                        session.add(
                            _delivery(
                                row.account_id, channel, count, reason, now_ms, sealer, settings
                            )
                        )
                samples = [*samples, count][-KEPT_SAMPLES[frequency] :]
            current.state = {
                "frequency": frequency,
                "period": period,
                "total": total,
                "samples": samples,
            }
            await session.commit()
    return fired


def _delivery(
    account_id: str,
    channel: Channel,
    count: int,
    reason: str,
    now_ms: int,
    sealer: Sealer,
    settings: Settings,
) -> AlertDelivery:
    notification = Notification(
        event="trigger",
        source="index-rate",
        account_id=account_id,
        name="Index rate alert",
        fired_ms=now_ms,
        count=count,
        detail=reason,
        # The usage page charts the account's lines per day.
        url=app_link(settings.public_url, "/usage", account_id=account_id),
    )
    return pending_delivery(
        notification, channel, channel_key="index-rate", now_ms=now_ms, sealer=sealer
    )

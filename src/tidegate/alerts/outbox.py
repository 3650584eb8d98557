"""Delivering the outbox: claim due notifications, send them, record the outcome.

A row is claimed with a compare-and-set on its claim (only a pending, due row whose
earlier claim expired can be claimed), so across workers one sends it at a time. A
failure that may pass is retried after ``alert_delivery_backoff_s`` doubling per
attempt (capped at ``alert_delivery_backoff_max_s``), ``alert_delivery_attempts`` times
in all; then the row is ``failed``. Delivery is at least once: a worker that dies
between sending and recording lets the claim expire and the row be sent again.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import httpx
from sqlalchemy import select, update

from tidegate import metrics
from tidegate.alerts.channels import Channel
from tidegate.alerts.integrations import INTEGRATIONS, SendContext
from tidegate.alerts.notification import Notification
from tidegate.alerts.sealed import open_channel, seal_channel
from tidegate.auth.secrets import Sealer
from tidegate.config import Settings
from tidegate.db.engine import Database
from tidegate.delivery import DeliveryFailed
from tidegate.kit.destination_guard import GuardedTransport, policy_from_setting, tls_context
from tidegate.models import AlertDelivery

if TYPE_CHECKING:
    from tidegate.logs.intake import LineIntake

log = logging.getLogger(__name__)

CLAIM_BATCH = 20


def backoff_ms(settings: Settings, attempts: int) -> int:
    """The wait before attempt ``attempts + 1`` (``attempts`` >= 1 made so far)."""
    delay = settings.alert_delivery_backoff_s * (2 ** (attempts - 1))
    return int(min(delay, settings.alert_delivery_backoff_max_s) * 1000)


def pending_delivery(
    notification: Notification,
    channel: Channel,
    *,
    channel_key: str,
    now_ms: int,
    sealer: Sealer,
) -> AlertDelivery:
    """The outbox row of a firing not tied to a view (index-rate and pipeline alerts),
    due now; added by the caller to the transaction that records the firing."""
    return AlertDelivery(
        account_id=notification.account_id,
        view_id=None,
        source=notification.source,
        channel_key=channel_key,
        integration=channel.integration,
        channel_sealed=seal_channel(sealer, channel),
        event=notification.event,
        payload=notification.as_payload(),
        status="pending",
        attempts=0,
        fired_ms=now_ms,
        next_attempt_ms=now_ms,
        claimed_by=None,
        claimed_until_ms=0,
    )


@dataclass(slots=True)
class OutboxResult:
    delivered: int = 0
    retried: int = 0
    failed: int = 0


class Outbox:
    def __init__(
        self,
        db: Database,
        sealer: Sealer,
        settings: Settings,
        *,
        clock: Callable[[], int],
        intake: LineIntake | None = None,
    ) -> None:
        self.db = db
        self.sealer = sealer
        self.settings = settings
        self.clock = clock
        limits = httpx.Limits(max_connections=64, max_keepalive_connections=16)
        self._guarded = httpx.AsyncClient(
            transport=GuardedTransport(
                policy_from_setting(settings.destination_allow), limits=limits
            ),
            trust_env=False,
            follow_redirects=False,
            timeout=settings.alert_delivery_timeout_s,
            headers={"User-Agent": "tidegate-alerts"},
        )
        self._trusted = httpx.AsyncClient(
            verify=tls_context(),
            trust_env=False,
            follow_redirects=False,
            timeout=settings.alert_delivery_timeout_s,
            headers={"User-Agent": "tidegate-alerts"},
            limits=limits,
        )
        self.context = SendContext(
            settings=settings,
            guarded=self._guarded,
            trusted=self._trusted,
            intake=intake,
            clock=clock,
        )

    async def close(self) -> None:
        await self._guarded.aclose()
        await self._trusted.aclose()

    async def deliver_due(self) -> OutboxResult:
        result = OutboxResult()
        rows = await self._claim()
        if rows:
            outcomes = await asyncio.gather(*(self._send(row) for row in rows))
            await self._record(rows, outcomes, result)
        return result

    async def _claim(self) -> list[AlertDelivery]:
        now = self.clock()
        token = uuid.uuid4().hex
        until = now + int((self.settings.alert_delivery_timeout_s * 3 + 30) * 1000)
        due = (
            select(AlertDelivery.id)
            .where(
                AlertDelivery.status == "pending",
                AlertDelivery.next_attempt_ms <= now,
                AlertDelivery.claimed_until_ms < now,
            )
            .limit(1)
        )
        async with self.db.read_sessions() as session:
            # Most ticks find nothing: no write transaction (SQLite's write lock) then.
            if (await session.execute(due)).first() is None:
                return []
        async with self.db.write_sessions() as session:
            due = (
                select(AlertDelivery.id)
                .where(
                    AlertDelivery.status == "pending",
                    AlertDelivery.next_attempt_ms <= now,
                    AlertDelivery.claimed_until_ms < now,
                )
                .order_by(AlertDelivery.next_attempt_ms)
                .limit(CLAIM_BATCH)
            )
            if session.bind is not None and session.bind.dialect.name == "postgresql":
                due = due.with_for_update(skip_locked=True)
            ids = list((await session.execute(due)).scalars())
            if not ids:
                await session.rollback()
                return []
            await session.execute(
                update(AlertDelivery)
                .where(
                    AlertDelivery.id.in_(ids),
                    AlertDelivery.status == "pending",
                    AlertDelivery.claimed_until_ms < now,
                )
                .values(claimed_by=token, claimed_until_ms=until)
            )
            await session.commit()
        async with self.db.read_sessions() as session:
            claimed = await session.execute(
                select(AlertDelivery).where(AlertDelivery.claimed_by == token)
            )
            return list(claimed.scalars())

    async def _send(self, row: AlertDelivery) -> DeliveryFailed | None:
        channel = open_channel(self.sealer, row.channel_sealed)
        if channel is None:
            return DeliveryFailed("the channel's settings cannot be opened", retry=False)
        integration = INTEGRATIONS.get(channel.integration)
        if integration is None:
            return DeliveryFailed(f"unknown integration {channel.integration}", retry=False)
        started = time.perf_counter()
        try:
            async with asyncio.timeout(self.settings.alert_delivery_timeout_s * 2):
                await integration.send(
                    channel, Notification.from_payload(dict(row.payload)), self.context
                )
        except DeliveryFailed as failure:
            return failure
        except TimeoutError:
            return DeliveryFailed("timed out")
        except Exception as error:  # a sender bug must not stop the outbox
            log.exception("alert delivery %s failed unexpectedly", row.id)
            return DeliveryFailed(f"{type(error).__name__}", retry=False)
        finally:
            # The registry's names only (a fixed set): never the channel's own settings.
            metrics.ALERT_DELIVERY_SECONDS.labels(integration.name).observe(
                time.perf_counter() - started
            )
        return None

    async def _record(
        self, rows: list[AlertDelivery], outcomes: list[DeliveryFailed | None], result: OutboxResult
    ) -> None:
        now = self.clock()
        async with self.db.write_sessions() as session:
            for row, failure in zip(rows, outcomes, strict=True):
                attempts = row.attempts + 1
                values: dict[str, object] = {
                    "attempts": attempts,
                    "claimed_by": None,
                    "claimed_until_ms": 0,
                }
                if failure is None:
                    values.update(status="delivered", finished_ms=now, last_error=None)
                    result.delivered += 1
                elif failure.retry and attempts < self.settings.alert_delivery_attempts:
                    values.update(
                        next_attempt_ms=now + backoff_ms(self.settings, attempts),
                        last_error=str(failure)[:1000],
                    )
                    result.retried += 1
                else:
                    values.update(status="failed", finished_ms=now, last_error=str(failure)[:1000])
                    result.failed += 1
                await session.execute(
                    update(AlertDelivery)
                    .where(AlertDelivery.id == row.id, AlertDelivery.claimed_by == row.claimed_by)
                    .values(**values)
                )
            await session.commit()

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from tidegate.models.base import Base, new_hex_id


class AlertDelivery(Base):
    """One notification of one channel: the outbox row the evaluator writes in the
    transaction that records the firing, and the delivery log entry it becomes.

    ``status``: ``pending`` (due at ``next_attempt_ms``), ``delivered`` or ``failed``
    (retries exhausted). ``channel_sealed``: the channel's settings at firing time,
    sealed. ``view_id`` is null for the index-rate alert (``source``)."""

    __tablename__ = "alert_deliveries"
    __table_args__ = (
        Index("ix_alert_deliveries_due", "status", "next_attempt_ms"),
        Index("ix_alert_deliveries_view", "view_id", "fired_ms"),
    )

    id: Mapped[str] = mapped_column(String(24), primary_key=True, default=new_hex_id)
    account_id: Mapped[str] = mapped_column(
        String(24), ForeignKey("accounts.id", ondelete="CASCADE"), index=True
    )
    view_id: Mapped[str | None] = mapped_column(
        String(24), ForeignKey("views.id", ondelete="CASCADE"), default=None
    )
    source: Mapped[str] = mapped_column(String(16))
    channel_key: Mapped[str] = mapped_column(String(64))
    integration: Mapped[str] = mapped_column(String(16))
    channel_sealed: Mapped[str] = mapped_column(Text)
    event: Mapped[str] = mapped_column(String(16))
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(16), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    fired_ms: Mapped[int] = mapped_column(BigInteger)
    next_attempt_ms: Mapped[int] = mapped_column(BigInteger)
    claimed_by: Mapped[str | None] = mapped_column(String(64), default=None)
    claimed_until_ms: Mapped[int] = mapped_column(BigInteger, default=0)
    last_error: Mapped[str | None] = mapped_column(Text, default=None)
    finished_ms: Mapped[int | None] = mapped_column(BigInteger, default=None)

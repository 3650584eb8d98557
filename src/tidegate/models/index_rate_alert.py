from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Boolean, ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from tidegate.models.base import Base


class IndexRateAlert(Base):
    """An account's index-rate alert: its settings (sealed: the channels hold
    PagerDuty keys, Slack URLs and webhook headers) and the evaluator's state (the
    usage samples it compares against)."""

    __tablename__ = "index_rate_alerts"

    account_id: Mapped[str] = mapped_column(
        String(24), ForeignKey("accounts.id", ondelete="CASCADE"), primary_key=True
    )
    config_sealed: Mapped[str] = mapped_column(Text)
    enabled: Mapped[bool] = mapped_column(Boolean, default=False, index=True)
    state: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from tidegate.models.base import Base


class AlertState(Base):
    """One alert channel's window state (``tidegate.alerts.windows``). ``channel_key``
    names the channel and its settings, so a changed channel starts afresh."""

    __tablename__ = "alert_states"

    view_id: Mapped[str] = mapped_column(
        String(24), ForeignKey("views.id", ondelete="CASCADE"), primary_key=True
    )
    channel_key: Mapped[str] = mapped_column(String(64), primary_key=True)
    account_id: Mapped[str] = mapped_column(
        String(24), ForeignKey("accounts.id", ondelete="CASCADE"), index=True
    )
    state: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)

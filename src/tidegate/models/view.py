from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Boolean, ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from tidegate.models.base import Base, UTCDateTime, new_hex_id, utcnow


class View(Base):
    """A saved search, with the alert channels that watch it. ``channels_sealed`` is
    the channels' JSON sealed under the server secret (PagerDuty keys, webhook headers
    and Slack URLs are credentials); ``alerting`` says whether the evaluator must watch
    the view (it has channels of its own or a preset alert)."""

    __tablename__ = "views"

    id: Mapped[str] = mapped_column(String(24), primary_key=True, default=new_hex_id)
    account_id: Mapped[str] = mapped_column(
        String(24), ForeignKey("accounts.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(250))
    query: Mapped[str] = mapped_column(Text, default="")
    apps: Mapped[list[str]] = mapped_column(JSON, default=list)
    hosts: Mapped[list[str]] = mapped_column(JSON, default=list)
    levels: Mapped[list[str]] = mapped_column(JSON, default=list)
    tags: Mapped[list[str]] = mapped_column(JSON, default=list)
    category: Mapped[list[str]] = mapped_column(JSON, default=list)
    preset_id: Mapped[str | None] = mapped_column(
        String(24), ForeignKey("preset_alerts.id", ondelete="SET NULL"), default=None, index=True
    )
    channels_sealed: Mapped[str | None] = mapped_column(Text, default=None)
    alerting: Mapped[bool] = mapped_column(Boolean, default=False, index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # The person who made it (docs/isolation.md); null: made by a key acting as owner.
    made_by: Mapped[str | None] = mapped_column(String(24), default=None)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)

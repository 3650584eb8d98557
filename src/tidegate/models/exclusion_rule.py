from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Boolean, ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from tidegate.models.base import Base, UTCDateTime, new_hex_id, utcnow


class ExclusionRule(Base):
    __tablename__ = "exclusion_rules"

    id: Mapped[str] = mapped_column(String(24), primary_key=True, default=new_hex_id)
    account_id: Mapped[str] = mapped_column(
        String(24), ForeignKey("accounts.id", ondelete="CASCADE"), index=True
    )
    title: Mapped[str] = mapped_column(String(250))
    hosts: Mapped[list[str] | None] = mapped_column(JSON, default=None)
    apps: Mapped[list[str] | None] = mapped_column(JSON, default=None)
    query: Mapped[str | None] = mapped_column(Text, default=None)
    active: Mapped[bool] = mapped_column(Boolean, default=False)
    indexonly: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from tidegate.models.base import Base, UTCDateTime, new_hex_id, utcnow


class Account(Base):
    __tablename__ = "accounts"

    id: Mapped[str] = mapped_column(String(24), primary_key=True, default=new_hex_id)
    enterprise_id: Mapped[str] = mapped_column(
        String(24), ForeignKey("enterprises.id", ondelete="CASCADE"), index=True
    )
    # The short identifier ("account" in the spec), unique across the installation.
    short_id: Mapped[str] = mapped_column(String(20), unique=True)
    company: Mapped[str] = mapped_column(String(250))
    owner_id: Mapped[str] = mapped_column(String(24), ForeignKey("users.id"), index=True)
    external_id: Mapped[str | None] = mapped_column(String(255), default=None)
    plan_type: Mapped[str] = mapped_column(String(50), default="enterprise")
    retention: Mapped[int] = mapped_column(Integer, default=30)
    status: Mapped[str] = mapped_column(String(20), default="active")
    deactivated_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    enable_syslog: Mapped[bool] = mapped_column(default=False)
    meta: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # Ingestion suspension (tidegate.suspensions): set while suspended; the pending
    # confirmation token's keyed hash and expiry between suspend and confirm.
    ingestion_suspended_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    suspend_token_hash: Mapped[str | None] = mapped_column(String(64), default=None)
    suspend_token_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)

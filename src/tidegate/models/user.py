from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from tidegate.models.base import Base, UTCDateTime, new_hex_id, utcnow


class User(Base):
    """An account owner. Users are scoped to one enterprise so that an owner's
    account list can never name another tenant's accounts."""

    __tablename__ = "users"
    __table_args__ = (UniqueConstraint("enterprise_id", "email"),)

    id: Mapped[str] = mapped_column(String(24), primary_key=True, default=new_hex_id)
    enterprise_id: Mapped[str] = mapped_column(
        String(24), ForeignKey("enterprises.id", ondelete="CASCADE"), index=True
    )
    email: Mapped[str] = mapped_column(String(320))
    firstname: Mapped[str | None] = mapped_column(String(50), default=None)
    lastname: Mapped[str | None] = mapped_column(String(50), default=None)
    verified: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from tidegate.models.base import Base, UTCDateTime, utcnow


class Membership(Base):
    """A user's place in one account: the role says what they may do there."""

    __tablename__ = "memberships"

    user_id: Mapped[str] = mapped_column(
        String(24), ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    account_id: Mapped[str] = mapped_column(
        String(24), ForeignKey("accounts.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    # owner | admin | member | readonly (tidegate.auth.roles.Role)
    role: Mapped[str] = mapped_column(String(20))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

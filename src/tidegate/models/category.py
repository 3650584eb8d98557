from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from tidegate.models.base import Base, UTCDateTime, new_hex_id, utcnow


class Category(Base):
    """A named group of views, boards or screens (``type``)."""

    __tablename__ = "categories"
    __table_args__ = (UniqueConstraint("account_id", "type", "name_folded"),)

    id: Mapped[str] = mapped_column(String(24), primary_key=True, default=new_hex_id)
    account_id: Mapped[str] = mapped_column(
        String(24), ForeignKey("accounts.id", ondelete="CASCADE"), index=True
    )
    type: Mapped[str] = mapped_column(String(16))
    name: Mapped[str] = mapped_column(String(250))
    # Names are unique per account and type regardless of case (the provider compares
    # view categories case-insensitively).
    name_folded: Mapped[str] = mapped_column(String(250))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

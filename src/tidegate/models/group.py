from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from tidegate.models.base import Base, UTCDateTime, new_hex_id, utcnow


class Group(Base):
    """An account's group of members whose access scope limits the lines they see:
    ``apps`` and ``hosts`` (exact, any case) and ``query`` (the search syntax), all
    that are set must hold (docs/people.md)."""

    __tablename__ = "groups"

    id: Mapped[str] = mapped_column(String(24), primary_key=True, default=new_hex_id)
    account_id: Mapped[str] = mapped_column(
        String(24), ForeignKey("accounts.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(250))
    description: Mapped[str] = mapped_column(String(1000), default="")
    apps: Mapped[list[str]] = mapped_column(JSON, default=list)
    hosts: Mapped[list[str]] = mapped_column(JSON, default=list)
    query: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class GroupMember(Base):
    __tablename__ = "group_members"

    group_id: Mapped[str] = mapped_column(
        String(24), ForeignKey("groups.id", ondelete="CASCADE"), primary_key=True
    )
    user_id: Mapped[str] = mapped_column(
        String(24), ForeignKey("users.id", ondelete="CASCADE"), primary_key=True, index=True
    )

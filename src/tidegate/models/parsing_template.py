from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from tidegate.models.base import Base, UTCDateTime, new_hex_id, utcnow


class ParsingTemplate(Base):
    """An account's custom parsing template (docs/line-parsing.md, "Custom templates")."""

    __tablename__ = "parsing_templates"

    id: Mapped[str] = mapped_column(String(24), primary_key=True, default=new_hex_id)
    account_id: Mapped[str] = mapped_column(
        String(24), ForeignKey("accounts.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(250))
    pattern: Mapped[str] = mapped_column(Text)
    # "active", "inactive" or "draft"
    state: Mapped[str] = mapped_column(String(16), default="draft")
    # Order among the account's templates: the first active one that matches applies.
    position: Mapped[int] = mapped_column(Integer, default=0)
    activated_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)
    # How many lines it parsed and when it last did (epoch ms of the line's ingestion):
    # counted in memory per worker and added in batches (``logs.template_counts``).
    match_count: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    last_matched_ms: Mapped[int | None] = mapped_column(BigInteger, default=None)

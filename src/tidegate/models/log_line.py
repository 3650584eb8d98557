from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from tidegate.models.base import Base

# SQLite only auto-increments an INTEGER PRIMARY KEY, PostgreSQL wants a BIGINT.
LineId = BigInteger().with_variant(Integer(), "sqlite")


class LogLine(Base):
    """One stored log line. ``id`` grows with every insert (the export cursor's order);
    ``ts`` is the line's own time and ``received_ms`` when tidegate stored it, both epoch
    milliseconds."""

    __tablename__ = "log_lines"
    __table_args__ = (
        Index("ix_log_lines_account_ts", "account_id", "ts", "id"),
        Index("ix_log_lines_account_id", "account_id", "id"),
    )

    id: Mapped[int] = mapped_column(LineId, primary_key=True, autoincrement=True)
    account_id: Mapped[str] = mapped_column(
        String(24), ForeignKey("accounts.id", ondelete="CASCADE")
    )
    ts: Mapped[int] = mapped_column(BigInteger)
    received_ms: Mapped[int] = mapped_column(BigInteger)
    host: Mapped[str] = mapped_column(String(256))
    app: Mapped[str | None] = mapped_column(String(512), default=None)
    level: Mapped[str | None] = mapped_column(String(64), default=None)
    env: Mapped[str | None] = mapped_column(String(256), default=None)
    file: Mapped[str | None] = mapped_column(String(512), default=None)
    ip: Mapped[str | None] = mapped_column(String(64), default=None)
    mac: Mapped[str | None] = mapped_column(String(64), default=None)
    tags: Mapped[list[str] | None] = mapped_column(JSON, default=None)
    meta: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    line: Mapped[str] = mapped_column(Text)
    size_bytes: Mapped[int] = mapped_column(Integer)

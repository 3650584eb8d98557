from __future__ import annotations

from sqlalchemy import BigInteger, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from tidegate.models.base import Base


class ArchiveConfig(Base):
    """An account's archiving (``/v1/config/archiving``, docs/archiving.md): at most one
    per account. ``sealed``: the configuration as the client sent it (its keys and
    passwords included), as JSON sealed under the server secret."""

    __tablename__ = "archive_configs"

    account_id: Mapped[str] = mapped_column(
        String(24), ForeignKey("accounts.id", ondelete="CASCADE"), primary_key=True
    )
    integration: Mapped[str] = mapped_column(String(16))
    sealed: Mapped[str] = mapped_column(Text)
    created_ms: Mapped[int] = mapped_column(BigInteger)
    updated_ms: Mapped[int] = mapped_column(BigInteger)


class ArchiveDay(Base):
    """One account's UTC day to archive, and how far it got. ``day``: days since the
    epoch. ``status``: ``pending`` (due at ``next_attempt_ms``), ``retrying`` (an
    attempt failed; ``error`` says why), ``done`` (the object is complete in the
    bucket), ``failed`` (every attempt failed; a run on demand tries again).
    ``lease_*``: the worker uploading it now, so that only one does."""

    __tablename__ = "archive_days"

    account_id: Mapped[str] = mapped_column(
        String(24), ForeignKey("accounts.id", ondelete="CASCADE"), primary_key=True
    )
    day: Mapped[int] = mapped_column(Integer, primary_key=True)
    status: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_ms: Mapped[int] = mapped_column(BigInteger, index=True)
    lease_owner: Mapped[str | None] = mapped_column(String(64), default=None)
    lease_until_ms: Mapped[int] = mapped_column(BigInteger, default=0)
    error: Mapped[str | None] = mapped_column(Text, default=None)
    object_key: Mapped[str | None] = mapped_column(String(1024), default=None)
    lines: Mapped[int] = mapped_column(BigInteger, default=0)
    bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    completed_ms: Mapped[int | None] = mapped_column(BigInteger, default=None)
    updated_ms: Mapped[int] = mapped_column(BigInteger)

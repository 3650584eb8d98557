from __future__ import annotations

from datetime import date

from sqlalchemy import BigInteger, Date, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from tidegate.models.base import Base


class AccountUsage(Base):
    """Per account and UTC day: what was stored and what exclusion rules kept out."""

    __tablename__ = "account_usage"

    account_id: Mapped[str] = mapped_column(
        String(24), ForeignKey("accounts.id", ondelete="CASCADE"), primary_key=True
    )
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    lines_stored: Mapped[int] = mapped_column(BigInteger, default=0)
    bytes_stored: Mapped[int] = mapped_column(BigInteger, default=0)
    lines_excluded: Mapped[int] = mapped_column(BigInteger, default=0)
    bytes_excluded: Mapped[int] = mapped_column(BigInteger, default=0)
    # Lines stored (or excluded) only after a repair: a timestamp replaced by the
    # default time, a non-text field coerced, a field truncated or dropped.
    lines_fallback: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")

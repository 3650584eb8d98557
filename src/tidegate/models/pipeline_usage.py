from __future__ import annotations

from typing import Final

from sqlalchemy import BigInteger, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from tidegate.models.base import Base

# One row per component and minute: the width of ``bucket_ms``.
BUCKET_MS: Final = 60_000


class PipelineUsage(Base):
    """Events and bytes into and out of one pipeline component during one minute
    (``bucket_ms`` is the minute's start, epoch ms). Workers count in memory and add
    their counts here every few seconds."""

    __tablename__ = "pipeline_usage"
    __table_args__ = (Index("ix_pipeline_usage_account_bucket", "account_id", "bucket_ms"),)

    pipeline_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    component_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    bucket_ms: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    account_id: Mapped[str] = mapped_column(
        String(24), ForeignKey("accounts.id", ondelete="CASCADE")
    )
    ingress_events: Mapped[int] = mapped_column(BigInteger, default=0)
    ingress_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    egress_events: Mapped[int] = mapped_column(BigInteger, default=0)
    egress_bytes: Mapped[int] = mapped_column(BigInteger, default=0)

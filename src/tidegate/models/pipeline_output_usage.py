from __future__ import annotations

from sqlalchemy import BigInteger, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from tidegate.models.base import Base


class PipelineOutputUsage(Base):
    """Events and bytes one component sent by one of its named outputs (a route
    processor's arm ``<route id>.<output_name>``, its ``_unmatched``, a throttle's
    ``dropped``) during one minute: what a pipeline alert whose inputs name such an
    output counts. Counted and flushed as ``pipeline_usage`` is (``runtime.usage``)."""

    __tablename__ = "pipeline_output_usage"
    __table_args__ = (Index("ix_pipeline_output_usage_account_bucket", "account_id", "bucket_ms"),)

    pipeline_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    component_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    output: Mapped[str] = mapped_column(String(64), primary_key=True)
    bucket_ms: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    account_id: Mapped[str] = mapped_column(
        String(24), ForeignKey("accounts.id", ondelete="CASCADE")
    )
    events: Mapped[int] = mapped_column(BigInteger, default=0)
    bytes: Mapped[int] = mapped_column(BigInteger, default=0)

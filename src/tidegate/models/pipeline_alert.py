from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from tidegate.models.base import Base, UTCDateTime, new_uuid, utcnow


class PipelineAlert(Base):
    """A threshold, absence or change alert on one pipeline component (the platform's
    pipeline alerts, docs/api-pipelines.md). ``evaluation`` and ``general`` are the
    ``alert_config`` parts as stored; ``payload_sealed`` its ``alert_payload`` (routing
    keys, tokens, webhook headers), sealed. ``state``: the evaluator's windows."""

    __tablename__ = "pipeline_alerts"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_uuid)
    account_id: Mapped[str] = mapped_column(
        String(24), ForeignKey("accounts.id", ondelete="CASCADE"), index=True
    )
    pipeline_id: Mapped[str] = mapped_column(
        String(36), ForeignKey("pipelines.id", ondelete="CASCADE"), index=True
    )
    component_kind: Mapped[str] = mapped_column(String(20))
    component_id: Mapped[str] = mapped_column(String(36))
    inputs: Mapped[list[str]] = mapped_column(JSON, default=list)
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    general: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    evaluation: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    payload_sealed: Mapped[str] = mapped_column(Text)
    state: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)

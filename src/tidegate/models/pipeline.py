from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from tidegate.models.base import Base, UTCDateTime, new_uuid, utcnow


class Pipeline(Base):
    __tablename__ = "pipelines"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_uuid)
    account_id: Mapped[str] = mapped_column(
        String(24), ForeignKey("accounts.id", ondelete="CASCADE"), index=True
    )
    title: Mapped[str] = mapped_column(String(250))
    description: Mapped[str | None] = mapped_column(String(1000), default=None)
    # Bumped on every change to the pipeline or its nodes, so running workers can
    # tell cheaply that their compiled graph is stale.
    revision: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)


class PipelineNode(Base):
    """A source, processor or destination of a pipeline; ``inputs`` are upstream node ids
    (a throttle's second output is addressed as ``<node_id>.dropped``)."""

    __tablename__ = "pipeline_nodes"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_uuid)
    pipeline_id: Mapped[str] = mapped_column(
        String(36), ForeignKey("pipelines.id", ondelete="CASCADE"), index=True
    )
    account_id: Mapped[str] = mapped_column(
        String(24), ForeignKey("accounts.id", ondelete="CASCADE"), index=True
    )
    kind: Mapped[str] = mapped_column(String(20))  # source | processor | destination
    type: Mapped[str] = mapped_column(String(50))
    title: Mapped[str | None] = mapped_column(String(250), default=None)
    inputs: Mapped[list[str]] = mapped_column(JSON, default=list)
    user_config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    gateway_route_id: Mapped[str | None] = mapped_column(
        String(36), ForeignKey("gateway_routes.id", ondelete="SET NULL"), index=True, default=None
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)

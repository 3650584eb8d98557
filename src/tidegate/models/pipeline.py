from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, ForeignKey, Integer, String, Text
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
    # Bumped on every change to the draft (the pipeline or its nodes).
    revision: Mapped[int] = mapped_column(Integer, default=1)
    # Optimistic concurrency of the pipeline's own fields: bumped by each update of them.
    generation_id: Mapped[int] = mapped_column(Integer, default=0)
    # The draft revision that runs (copied into published_pipeline_nodes); null: never
    # published, nothing runs.
    published_revision: Mapped[int | None] = mapped_column(Integer, default=None)
    published_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    origin: Mapped[str | None] = mapped_column(String(50), default=None)
    deploy_type: Mapped[str | None] = mapped_column(String(50), default=None)
    deployment_groups: Mapped[list[str] | None] = mapped_column(JSON, default=None)
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
    description: Mapped[str | None] = mapped_column(String(1000), default=None)
    # Optimistic concurrency: 0 when created, bumped by each update of the node.
    generation_id: Mapped[int] = mapped_column(Integer, default=0)
    inputs: Mapped[list[str]] = mapped_column(JSON, default=list)
    # The node's user_config, sealed under the server secret (it holds credentials):
    # read and written only through pipelines.sealed_config.
    user_config_sealed: Mapped[str] = mapped_column(Text)
    gateway_route_id: Mapped[str | None] = mapped_column(
        String(36), ForeignKey("gateway_routes.id", ondelete="SET NULL"), index=True, default=None
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)


class PublishedPipelineNode(Base):
    """A node of a pipeline's published revision: what the data plane runs. Publishing
    replaces a pipeline's rows with a copy of its draft nodes (same ids, so running
    processors whose configuration did not change are kept)."""

    __tablename__ = "published_pipeline_nodes"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    pipeline_id: Mapped[str] = mapped_column(
        String(36), ForeignKey("pipelines.id", ondelete="CASCADE"), index=True
    )
    account_id: Mapped[str] = mapped_column(
        String(24), ForeignKey("accounts.id", ondelete="CASCADE"), index=True
    )
    kind: Mapped[str] = mapped_column(String(20))
    type: Mapped[str] = mapped_column(String(50))
    title: Mapped[str | None] = mapped_column(String(250), default=None)
    inputs: Mapped[list[str]] = mapped_column(JSON, default=list)
    # The node's user_config, sealed under the server secret (it holds credentials):
    # read and written only through pipelines.sealed_config.
    user_config_sealed: Mapped[str] = mapped_column(Text)
    gateway_route_id: Mapped[str | None] = mapped_column(
        String(36), ForeignKey("gateway_routes.id", ondelete="SET NULL"), index=True, default=None
    )
    # The draft node's creation time: keeps the run order of equal-rank nodes stable.
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

from __future__ import annotations

from sqlalchemy import BigInteger, ForeignKey, Integer, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from tidegate.models.base import Base


class PipelineAlertEvents(Base):
    """Events a worker ran for a pipeline alert judged on events, handed to the worker
    that judges them (``runtime.alert_events``: one worker at a time holds the
    ``pipeline-events`` lease in ``alert_cursors`` and folds every worker's events, so
    a load spread over several workers is judged whole).

    A queue, not a record: the judge deletes the rows it takes, and rows no judge took
    within a minute are dropped. ``events`` is the JSON array of at most
    ``CHUNK_EVENTS`` events; ``count`` how many it holds. They are the tenant's events:
    deleting the alert (its pipeline, its account) deletes them."""

    __tablename__ = "pipeline_alert_events"

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer(), "sqlite"), primary_key=True, autoincrement=True
    )
    alert_id: Mapped[str] = mapped_column(
        String(36), ForeignKey("pipeline_alerts.id", ondelete="CASCADE"), index=True
    )
    created_ms: Mapped[int] = mapped_column(BigInteger)
    count: Mapped[int] = mapped_column(Integer)
    events: Mapped[bytes] = mapped_column(LargeBinary)


class PipelineAlertWindows(Base):
    """The open windows of a pipeline alert judged on events, as its judge last saved
    them (``runtime.alert_events``, at most once a round, when they changed): the worker
    that judges next (after a restart, or when the lease moves) starts from them, if
    the alert's definition is still the one they were folded under (``fingerprint``).
    ``windows``: JSON, the aggregator's windows and a change alert's windows before
    (folded from the tenant's events: deleting the alert deletes them)."""

    __tablename__ = "pipeline_alert_windows"

    alert_id: Mapped[str] = mapped_column(
        String(36), ForeignKey("pipeline_alerts.id", ondelete="CASCADE"), primary_key=True
    )
    fingerprint: Mapped[str] = mapped_column(String(64))
    saved_ms: Mapped[int] = mapped_column(BigInteger)
    windows: Mapped[bytes] = mapped_column(LargeBinary)

from __future__ import annotations

from sqlalchemy import BigInteger, Integer, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from tidegate.models.base import Base


class PipelineAlertEvents(Base):
    """Events a worker ran for a pipeline alert judged on events, handed to the worker
    that judges them (``runtime.alert_events``: one worker at a time holds the
    ``pipeline-events`` lease in ``alert_cursors`` and folds every worker's events, so
    a load spread over several workers is judged whole).

    A queue, not a record: the judge deletes the rows it takes, and rows no judge took
    within a minute are dropped. ``events`` is the JSON array of at most
    ``CHUNK_EVENTS`` events; ``count`` how many it holds. No foreign key: an alert
    deleted meanwhile leaves rows the judge drops."""

    __tablename__ = "pipeline_alert_events"

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer(), "sqlite"), primary_key=True, autoincrement=True
    )
    alert_id: Mapped[str] = mapped_column(String(36))
    created_ms: Mapped[int] = mapped_column(BigInteger)
    count: Mapped[int] = mapped_column(Integer)
    events: Mapped[bytes] = mapped_column(LargeBinary)


class PipelineAlertWindows(Base):
    """The open windows of a pipeline alert judged on events, as its judge last saved
    them (``runtime.alert_events``, at most once a round, when they changed): the worker
    that judges next (after a restart, or when the lease moves) starts from them, if
    the alert's definition is still the one they were folded under (``fingerprint``).
    ``windows``: JSON, the aggregator's windows and a change alert's windows before."""

    __tablename__ = "pipeline_alert_windows"

    alert_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(64))
    saved_ms: Mapped[int] = mapped_column(BigInteger)
    windows: Mapped[bytes] = mapped_column(LargeBinary)

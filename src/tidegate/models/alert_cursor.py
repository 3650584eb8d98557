from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from tidegate.models.base import Base


class AlertCursor(Base):
    """How far the alert evaluator has read the stored lines (docs/alerts.md). One row
    (``name = "lines"``) for the whole store: lines are read in id order, all accounts
    together. A second row (``name = "pipeline-events"``) is only a lease: which worker
    judges the pipeline alerts judged on events (``runtime.alert_events``).

    ``last_line_id``: every line with a smaller or equal id was evaluated, except ids in
    ``gaps`` (PostgreSQL only: ids absent when read, which a transaction still in flight
    may yet commit, ``[[low, high, first_seen_ms], ...]``). ``version`` grows with every
    evaluation committed, and an evaluation commits only if the version is still the one
    it read: two workers can never both count a line. ``lease_*`` says which worker
    evaluates now (so that the others do not do the work for nothing)."""

    __tablename__ = "alert_cursors"

    name: Mapped[str] = mapped_column(String(32), primary_key=True)
    last_line_id: Mapped[int] = mapped_column(BigInteger, default=0)
    gaps: Mapped[list[list[int]]] = mapped_column(JSON, default=list)
    version: Mapped[int] = mapped_column(Integer, default=0)
    lease_owner: Mapped[str | None] = mapped_column(String(64), default=None)
    lease_until_ms: Mapped[int] = mapped_column(BigInteger, default=0)
    # The time (epoch ms) the windows were last advanced to.
    evaluated_ms: Mapped[int] = mapped_column(BigInteger, default=0)
    extra: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)

from __future__ import annotations

import builtins

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from tidegate.models.base import Base


class LogSegment(Base):
    """One immutable columnar segment of an account's lines (docs/log-store.md,
    "Segments"): a Parquet file under the segment directory (``path``, relative to it),
    holding the lines received in the window starting at ``window_ms`` with ids
    ``min_id..max_id``, ``lines`` of them. A line is either here or in ``log_lines``,
    never both: registering a segment and deleting its lines from ``log_lines`` is one
    transaction. A segment is never rewritten; retention deletes its row (then its file)
    once ``max_received_ms``, its youngest line's received time, is past the account's
    retention."""

    __tablename__ = "log_segments"
    __table_args__ = (Index("ix_log_segments_account_ts", "account_id", "min_ts"),)

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer(), "sqlite"), primary_key=True, autoincrement=True
    )
    account_id: Mapped[str] = mapped_column(
        String(24), ForeignKey("accounts.id", ondelete="CASCADE")
    )
    path: Mapped[str] = mapped_column(String(256), unique=True)
    window_ms: Mapped[int] = mapped_column(BigInteger)
    lines: Mapped[int] = mapped_column(BigInteger)
    bytes: Mapped[int] = mapped_column(BigInteger)
    min_ts: Mapped[int] = mapped_column(BigInteger)
    max_ts: Mapped[int] = mapped_column(BigInteger)
    min_id: Mapped[int] = mapped_column(BigInteger)
    max_id: Mapped[int] = mapped_column(BigInteger)
    created_ms: Mapped[int] = mapped_column(BigInteger)
    max_received_ms: Mapped[int] = mapped_column(BigInteger)
    # The segment index (tidegate.logs.segment_index): Bloom filters of the trigrams of
    # each row group's folded line and meta, so a read skips the segments and row groups
    # that cannot hold a search literal without opening their file. Null for a segment
    # written before it (migration 0022): read whole. Deferred: the ORM never loads it
    # with the row; reads select it on its own.
    # (``builtins.bytes``: this class's ``bytes`` is the file's size.)
    trigram_filters: Mapped[builtins.bytes | None] = mapped_column(
        LargeBinary, default=None, deferred=True
    )


class SegmentLease(Base):
    """Which process compacts now (one row, ``name = "compactor"``)."""

    __tablename__ = "log_segment_lease"

    name: Mapped[str] = mapped_column(String(32), primary_key=True)
    lease_owner: Mapped[str | None] = mapped_column(String(64), default=None)
    lease_until_ms: Mapped[int] = mapped_column(BigInteger, default=0)

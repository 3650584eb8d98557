from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, ForeignKey, Index, Integer, String, Text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from tidegate.models.base import Base

# SQLite only auto-increments an INTEGER PRIMARY KEY, PostgreSQL wants a BIGINT.
LineId = BigInteger().with_variant(Integer(), "sqlite")
# jsonb on PostgreSQL: stored parsed, so reading a field never re-parses the text.
Document = JSON().with_variant(JSONB(), "postgresql")
# Folded values compare in code point order on both backends (SQLite's BINARY), so a
# case-insensitive prefix is a range of the index.
Folded = String().with_variant(String(collation="C"), "postgresql")


class LogLine(Base):
    """One stored log line. ``id`` grows with every insert (the export cursor's order);
    ``ts`` is the line's own time and ``received_ms`` when tidegate stored it, both epoch
    milliseconds.

    ``*_folded`` are ``str.casefold()`` of host, app and level: what ``host:``, ``app:``
    and ``level:`` search, through the indexes below. The line's *search text* (its text
    and meta, case-folded: ``tidegate.logs.store.search_text``) is indexed by trigrams: on
    SQLite in the FTS5 table ``log_search`` (rowid = ``id``, created by the migration), on
    PostgreSQL in the ``search`` column (``pg_trgm`` GIN), which exists only there. On
    PostgreSQL the table is partitioned by day of ``received_ms`` (docs/log-store.md).
    The schema itself is the migrations'; this class names the columns for statements.
    """

    __tablename__ = "log_lines"
    __table_args__ = (
        Index("ix_log_lines_account_ts", "account_id", "ts", "id"),
        Index("ix_log_lines_account_id", "account_id", "id"),
        Index(
            "ix_log_lines_account_level_app", "account_id", "level_folded", "app_folded", "ts", "id"
        ),
        Index("ix_log_lines_account_app", "account_id", "app_folded", "ts", "id"),
        Index("ix_log_lines_account_host", "account_id", "host_folded", "ts", "id"),
    )

    id: Mapped[int] = mapped_column(LineId, primary_key=True, autoincrement=True)
    account_id: Mapped[str] = mapped_column(
        String(24), ForeignKey("accounts.id", ondelete="CASCADE")
    )
    ts: Mapped[int] = mapped_column(BigInteger)
    received_ms: Mapped[int] = mapped_column(BigInteger)
    host: Mapped[str] = mapped_column(String(256))
    app: Mapped[str | None] = mapped_column(String(512), default=None)
    level: Mapped[str | None] = mapped_column(String(64), default=None)
    env: Mapped[str | None] = mapped_column(String(256), default=None)
    file: Mapped[str | None] = mapped_column(String(512), default=None)
    ip: Mapped[str | None] = mapped_column(String(64), default=None)
    mac: Mapped[str | None] = mapped_column(String(64), default=None)
    tags: Mapped[list[str] | None] = mapped_column(Document, default=None)
    meta: Mapped[dict[str, Any] | None] = mapped_column(Document, default=None)
    # Meta sent unindexed (``@logdna/logger``'s ``indexMeta: false``, the Python
    # handler's default: a JSON string): shown with the line, never searched.
    meta_unindexed: Mapped[dict[str, Any] | None] = mapped_column(Document, default=None)
    line: Mapped[str] = mapped_column(Text)
    size_bytes: Mapped[int] = mapped_column(Integer)
    host_folded: Mapped[str] = mapped_column(Folded)
    app_folded: Mapped[str | None] = mapped_column(Folded, default=None)
    level_folded: Mapped[str | None] = mapped_column(Folded, default=None)
    # PostgreSQL only (see above); never selected, only searched.
    search: Mapped[str] = mapped_column(Text, deferred=True)

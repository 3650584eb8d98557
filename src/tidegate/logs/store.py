"""The log store: lines in the same database as everything else, with per-account,
per-day usage. Every writer of lines (ingestion, the pipeline's log_analysis
destination) goes through ``store_lines`` so usage can never drift from what is stored.
Runs inside the caller's transaction: the request's session commits before it answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import insert
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.models import AccountUsage, LogLine


@dataclass(slots=True)
class NewLine:
    line: str
    ts: int
    host: str
    app: str | None = None
    level: str | None = None
    env: str | None = None
    file: str | None = None
    ip: str | None = None
    mac: str | None = None
    tags: list[str] | None = None
    meta: dict[str, Any] | None = None
    size_bytes: int = field(default=-1)
    # True when the writer had to repair the line to store it (a timestamp replaced by
    # the default time, a non-text line or field coerced, a field truncated or dropped):
    # counted per day as ``lines_fallback`` in usage.
    repaired: bool = False

    def __post_init__(self) -> None:
        if self.size_bytes < 0:
            self.size_bytes = len(self.line.encode("utf-8", "surrogatepass"))


_INSERT_CHUNK = 1_000

USAGE_COUNTERS = (
    "lines_stored",
    "bytes_stored",
    "lines_excluded",
    "bytes_excluded",
    "lines_fallback",
)


def utc_day(epoch_ms: int) -> date:
    return datetime.fromtimestamp(epoch_ms / 1000, UTC).date()


async def store_lines(
    *,
    session: AsyncSession,
    account_id: str,
    lines: Sequence[NewLine],
    received_ms: int,
    excluded_lines: int = 0,
    excluded_bytes: int = 0,
    excluded_repaired: int = 0,
) -> int:
    """Insert ``lines`` and count them (and the excluded ones) in today's usage.
    ``lines_fallback`` counts the repaired lines among ``lines`` plus
    ``excluded_repaired`` (repaired lines that exclusion rules kept out)."""
    # In chunks: SQLAlchemy prepares every row's parameters (JSON columns included) on
    # the event loop before a statement runs, so one 100,000-row statement held the loop
    # for seconds; between chunks the loop serves other requests (same transaction).
    for start in range(0, len(lines), _INSERT_CHUNK):
        await session.execute(
            insert(LogLine),
            [
                {
                    "account_id": account_id,
                    "ts": item.ts,
                    "received_ms": received_ms,
                    "host": item.host,
                    "app": item.app,
                    "level": item.level,
                    "env": item.env,
                    "file": item.file,
                    "ip": item.ip,
                    "mac": item.mac,
                    "tags": item.tags,
                    "meta": item.meta,
                    "line": item.line,
                    "size_bytes": item.size_bytes,
                }
                for item in lines[start : start + _INSERT_CHUNK]
            ],
        )
    if lines or excluded_lines:
        await add_usage(
            session=session,
            account_id=account_id,
            day=utc_day(received_ms),
            lines_stored=len(lines),
            bytes_stored=sum(item.size_bytes for item in lines),
            lines_excluded=excluded_lines,
            bytes_excluded=excluded_bytes,
            lines_fallback=sum(1 for item in lines if item.repaired) + excluded_repaired,
        )
    return len(lines)


async def add_usage(
    *,
    session: AsyncSession,
    account_id: str,
    day: date,
    lines_stored: int = 0,
    bytes_stored: int = 0,
    lines_excluded: int = 0,
    bytes_excluded: int = 0,
    lines_fallback: int = 0,
) -> None:
    values = {
        "account_id": account_id,
        "day": day,
        "lines_stored": lines_stored,
        "bytes_stored": bytes_stored,
        "lines_excluded": lines_excluded,
        "bytes_excluded": bytes_excluded,
        "lines_fallback": lines_fallback,
    }
    dialect = session.bind.dialect.name if session.bind is not None else "sqlite"
    upsert = (postgresql.insert if dialect == "postgresql" else sqlite.insert)(AccountUsage).values(
        values
    )
    increments = {
        name: getattr(AccountUsage, name) + upsert.excluded[name] for name in USAGE_COUNTERS
    }
    await session.execute(
        upsert.on_conflict_do_update(index_elements=["account_id", "day"], set_=increments)
    )

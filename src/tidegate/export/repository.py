"""Queries of the export: the high-water mark and keyset range scans."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Row, func, select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.models import LogLine

_COLUMNS = (
    LogLine.id,
    LogLine.ts,
    LogLine.host,
    LogLine.app,
    LogLine.level,
    LogLine.env,
    LogLine.file,
    LogLine.ip,
    LogLine.mac,
    LogLine.tags,
    LogLine.meta,
    LogLine.line,
)

LineRow = Row[tuple[int, int, str, str | None, str | None, str | None, str | None,
                    str | None, str | None, list[str] | None, dict[str, Any] | None, str]]  # fmt: skip


async def newest_line_id(*, session: AsyncSession, account_id: str) -> int | None:
    """The largest id among the account's committed lines (index (account_id, id))."""
    statement = select(func.max(LogLine.id)).where(LogLine.account_id == account_id)
    value: int | None = (await session.execute(statement)).scalar_one_or_none()
    return value


async def scan_lines(
    *,
    session: AsyncSession,
    account_id: str,
    from_ms: int,
    to_ms: int,
    max_id: int,
    after: tuple[int, int] | None,
    newest_first: bool,
    limit: int,
) -> Sequence[LineRow]:
    """Up to ``limit`` lines with ``from_ms <= ts <= to_ms`` and ``id <= max_id`` in
    (ts, id) order (descending when ``newest_first``), strictly past ``after``: one
    range of the index (account_id, ts, id)."""
    position = tuple_(LogLine.ts, LogLine.id)
    statement = select(*_COLUMNS).where(
        LogLine.account_id == account_id,
        LogLine.ts >= from_ms,
        LogLine.ts <= to_ms,
        LogLine.id <= max_id,
    )
    if after is not None:
        statement = statement.where(
            position < tuple_(*after) if newest_first else position > tuple_(*after)
        )
    if newest_first:
        statement = statement.order_by(LogLine.ts.desc(), LogLine.id.desc())
    else:
        statement = statement.order_by(LogLine.ts.asc(), LogLine.id.asc())
    rows: Sequence[LineRow] = (await session.execute(statement.limit(limit))).all()
    return rows

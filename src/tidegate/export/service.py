"""Export v2: one page of an account's stored lines.

The export's lines are fixed by its first request: those with ``from <= ts <= to``
and an id no larger than the high-water mark (the account's largest committed line id
when the first page was asked for), in (ts, id) order, oldest first for ``head`` and
newest first for ``tail``. Each page continues strictly after the last line the
previous one scanned, so no line is returned twice, and every line committed before the
first request is returned exactly once (see docs/export-and-tail.md for PostgreSQL).

``hosts``, ``apps``, ``levels`` and ``query`` are evaluated in Python on chunks of an
indexed range scan, at most ``MAX_SCANNED_PER_REQUEST`` rows per request: a filter
that matches little over a long range answers a short (possibly empty) page with a
``pagination_id`` to continue from where the scan stopped.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.auth.secrets import Sealer
from tidegate.export import repository
from tidegate.export.cursor import ExportCursor
from tidegate.export.reading import PageReader, run_off_loop
from tidegate.export.repository import LineRow
from tidegate.export.schemas import ExportRequest
from tidegate.logs.filtering import LineFilter
from tidegate.logs.record import public_record

MAX_SCANNED_PER_REQUEST = 100_000
MIN_SCAN_CHUNK = 100
MAX_SCAN_CHUNK = 5_000


async def export_page(
    *,
    database_url: str,
    session: AsyncSession,
    sealer: Sealer,
    account_id: str,
    request: ExportRequest,
) -> bytes:
    """The page as the JSON body of the answer (``schemas.ExportPage``). All of it (the
    cursor, the queries, decoding, filtering and encoding) runs in an export worker
    thread: tidegate.export.reading."""

    def page(reader: PageReader) -> bytes:
        return _encode(
            page_of_lines(reader=reader, sealer=sealer, account_id=account_id, request=request)
        )

    return await run_off_loop(database_url=database_url, session=session, page=page)


def page_of_lines(
    *, reader: PageReader, sealer: Sealer, account_id: str, request: ExportRequest
) -> dict[str, Any]:
    """One page, ``{"lines": [...], "pagination_id": ...}``; runs in the worker thread."""
    fingerprint = request.fingerprint()
    after: tuple[int, int] | None = None
    if request.pagination_id is None:
        max_id = reader.scalar(repository.newest_line_id(account_id=account_id))
        if max_id is None:
            return {"lines": [], "pagination_id": None}
    else:
        cursor = ExportCursor.open(
            request.pagination_id, sealer=sealer, account_id=account_id, fingerprint=fingerprint
        )
        max_id, after = cursor.max_id, (cursor.last_ts, cursor.last_id)

    scan = _Scan(
        reader=reader, account_id=account_id, request=request, max_id=int(max_id), after=after
    )
    if request.line_filter.selects_everything:
        scan.unfiltered()
    else:
        scan.filtered(request.line_filter)

    if scan.exhausted or scan.after is None:
        return {"lines": scan.records, "pagination_id": None}
    last_ts, last_id = scan.after
    next_cursor = ExportCursor(account_id, fingerprint, int(max_id), last_ts, last_id)
    return {"lines": scan.records, "pagination_id": next_cursor.seal(sealer)}


def _encode(body: dict[str, Any]) -> bytes:
    try:
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    except UnicodeEncodeError:
        # A stored lone surrogate: escaped (\udXXX) it is still valid JSON text.
        return json.dumps(body, separators=(",", ":")).encode()


class _Scan:
    """One request's walk along the index, from ``after`` on."""

    def __init__(
        self,
        *,
        reader: PageReader,
        account_id: str,
        request: ExportRequest,
        max_id: int,
        after: tuple[int, int] | None,
    ) -> None:
        self.reader = reader
        self.account_id = account_id
        self.request = request
        self.max_id = max_id
        self.after = after
        self.records: list[dict[str, Any]] = []
        self.exhausted = False

    def _rows(self, limit: int) -> list[LineRow]:
        return self.reader.rows(
            repository.scan_lines(
                account_id=self.account_id,
                from_ms=self.request.from_ms,
                to_ms=self.request.to_ms,
                max_id=self.max_id,
                after=self.after,
                newest_first=self.request.prefer == "tail",
                limit=limit,
            )
        )

    def unfiltered(self) -> None:
        size = self.request.size
        # One row more than the page tells whether another page exists.
        rows = self._rows(size + 1)
        self.exhausted = len(rows) <= size
        page = rows[:size]
        self.records = [_record(row, row.meta()) for row in page]
        if page:
            self.after = (page[-1].ts, page[-1].id)

    def filtered(self, line_filter: LineFilter) -> None:
        size = self.request.size
        scanned = 0
        # Start small (a page of 10 should not read thousands of rows), grow to the cap.
        chunk = min(MAX_SCAN_CHUNK, max(MIN_SCAN_CHUNK, 2 * size))
        while len(self.records) < size and scanned < MAX_SCANNED_PER_REQUEST:
            limit = min(chunk, MAX_SCANNED_PER_REQUEST - scanned)
            rows = self._rows(limit)
            scanned += len(rows)
            consumed = 0
            for row in rows:
                consumed += 1
                self.after = (row.ts, row.id)
                meta = row.meta()
                if line_filter.matches(
                    line=row.line,
                    host=row.host,
                    app=row.app,
                    level=row.level,
                    file=row.file,
                    meta=meta,
                ):
                    self.records.append(_record(row, meta))
                    if len(self.records) >= size:
                        break
            if len(rows) < limit and consumed == len(rows):
                self.exhausted = True
                return
            chunk = min(MAX_SCAN_CHUNK, chunk * 2)


def _record(row: LineRow, meta: dict[str, Any] | None) -> dict[str, Any]:
    return public_record(
        line=row.line,
        ts=row.ts,
        host=row.host,
        app=row.app,
        level=row.level,
        env=row.env,
        file=row.file,
        ip=row.ip,
        mac=row.mac,
        tags=row.tags(),
        meta=meta,
        line_id=row.id,
    )

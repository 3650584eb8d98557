"""Writes one account's UTC day to its bucket: the lines whose time (``ts``, as search
and export read it) falls in the day, oldest first, each as the JSON export returns
(one object per line, ``\\n`` after each), gzip-compressed, as one object.

Memory is bounded: lines are read ``chunk_lines`` at a time (keyset pages of the
export's own scan, a new short read transaction each), compressed as they come, and the
compressed bytes go up as parts of an ``ObjectUpload`` (an S3 multipart upload, or an
Azure block blob's blocks) whenever ``part_bytes`` have gathered; the worker never
holds more than one part and one chunk. Encoding and
compression run in a worker thread, off the loop, and so do the reads (lines in the
row store and in segments alike, merged in (ts, id) order, as export pages read them).
The object's lines are those committed when the write began (the account's largest line
id then, in either tier): a line stored
later for that day is not in it (docs/archiving.md).
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Final, Protocol

from tidegate import json_codec
from tidegate.db.engine import Database
from tidegate.export.service import chunk_of_lines, line_record
from tidegate.logs.read_queries import LineRow
from tidegate.logs.reading import run_off_loop
from tidegate.logs.store import DAY_MS
from tidegate.objectstore.s3 import MIN_PART_BYTES

__all__ = [
    "BLOCK_BYTES",
    "CHUNK_LINES",
    "PART_BYTES",
    "DayWritten",
    "Encoder",
    "ObjectUpload",
    "day_name",
    "day_rows",
    "object_key",
    "write_day",
]

CHUNK_LINES: Final = 1_000
PART_BYTES: Final = 2 * MIN_PART_BYTES  # an S3 multipart upload's parts
BLOCK_BYTES: Final = 4 * 1024 * 1024  # an Azure block blob's blocks (the SDKs' size)
CONTENT_TYPE: Final = "application/gzip"


class ObjectUpload(Protocol):
    """One object written part by part (``MultipartUpload``, ``BlockBlobUpload``): not
    there until ``complete``; ``abort`` after a failure."""

    @property
    def key(self) -> str: ...

    @property
    def started(self) -> bool: ...

    async def start(self, *, content_type: str, content_encoding: str | None = None) -> None: ...

    async def part(self, data: bytes) -> None: ...

    async def complete(self) -> None: ...

    async def abort(self) -> None: ...


@dataclass(frozen=True, slots=True)
class DayWritten:
    key: str | None  # None: the day had no lines, and no object was written
    lines: int
    bytes: int


def day_name(day: int) -> str:
    return datetime.fromtimestamp(day * DAY_MS / 1000, tz=UTC).strftime("%Y-%m-%d")


def object_key(account_id: str, day: int) -> str:
    """``<account>/<yyyy>/<mm>/<dd>/<account>.<yyyy-mm-dd>.json.gz``."""
    name = day_name(day)
    return f"{account_id}/{name.replace('-', '/')}/{account_id}.{name}.json.gz"


class Encoder:
    """NDJSON records into one gzip stream (mtime 0: the bytes depend on the lines only)."""

    def __init__(self) -> None:
        self._gzip = zlib.compressobj(6, zlib.DEFLATED, 31)

    def encode(self, rows: list[LineRow]) -> bytes:
        text = b"".join(json_codec.dumps(line_record(row, row.meta())) + b"\n" for row in rows)
        return self._gzip.compress(text)

    def finish(self) -> bytes:
        return self._gzip.flush()


async def day_rows(
    *, db: Database, account_id: str, day: int, chunk_lines: int = CHUNK_LINES
) -> AsyncGenerator[list[LineRow]]:
    """The day's lines committed now, in either tier of the log store (docs/log-store.md,
    "Segments"), oldest first, ``chunk_lines`` at a time (keyset pages of the export's
    scan of both tiers, each in a short read of its own, in an export thread)."""
    max_id: int | None = None
    after: tuple[int, int] | None = None
    while True:
        async with db.read_sessions() as session:
            max_id, rows = await run_off_loop(
                database=db,
                session=session,
                account_id=account_id,
                page=partial(
                    chunk_of_lines,
                    account_id=account_id,
                    from_ms=day * DAY_MS,
                    to_ms=(day + 1) * DAY_MS - 1,
                    max_id=max_id,
                    after=after,
                    size=chunk_lines,
                ),
            )
        if rows:
            yield rows
        if max_id is None or len(rows) < chunk_lines:
            return
        after = (rows[-1].ts, rows[-1].id)


async def write_day(
    *,
    db: Database,
    upload: ObjectUpload,
    account_id: str,
    day: int,
    chunk_lines: int = CHUNK_LINES,
    part_bytes: int = PART_BYTES,
    on_part: Callable[[], Awaitable[None]] | None = None,
) -> DayWritten:
    """The day written to ``upload`` (made for ``object_key(account_id, day)``), or no
    object when it has no lines; ``StoreFailed`` (after the client's retries) or a
    transport error otherwise, the upload aborted."""
    encoder = Encoder()
    buffer = bytearray()
    lines = size = 0
    chunks = day_rows(db=db, account_id=account_id, day=day, chunk_lines=chunk_lines)
    try:
        async with aclosing(chunks):
            async for rows in chunks:
                if not upload.started:
                    await upload.start(content_type=CONTENT_TYPE)
                lines += len(rows)
                buffer += await asyncio.to_thread(encoder.encode, rows)
                if len(buffer) >= part_bytes:
                    size += len(buffer)
                    await upload.part(bytes(buffer))
                    buffer.clear()
                    if on_part is not None:
                        await on_part()
        if not upload.started:
            return DayWritten(None, 0, 0)
        buffer += encoder.finish()
        size += len(buffer)
        await upload.part(bytes(buffer))
        await upload.complete()
    except BaseException:
        await asyncio.shield(upload.abort())
        raise
    return DayWritten(upload.key, lines, size)

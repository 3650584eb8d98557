"""The compactor: moves lines old enough from the row store into segments
(docs/log-store.md, "Segments").

One compactor runs at a time across workers and hosts: a round starts by taking the
lease (``log_segment_lease``, a compare-and-set like the alert evaluator's), and every
segment it registers renews the lease *in the registering transaction*, which fails
(and the segment is dropped) if another process took the lease meanwhile.

A move is crash-safe, in this order:

1. read the lines (one account, one window of ``received_ms``, at most ``max_lines``,
   by id from the account's oldest line);
2. write the Parquet file under a temporary name, fsync it, rename it into place, fsync
   the directory (in a worker thread: none of it on the event loop);
3. one transaction: renew the lease, register the segment, delete exactly those lines
   from ``log_lines`` (on SQLite with their search-index entries); if the delete does not
   remove exactly the lines the file holds (retention deleted some meanwhile), roll back
   and remove the file.

Before 3 commits, the lines are in the row store and the file is registered nowhere, so
no reader opens it; after, they are in the registered file only. A crash between 2 and 3
leaves a file that no registry row names: every round first removes such files (and
temporary ones). Readers list the account's segments and read the row store in one
consistent view (``tidegate.logs.tiers``), so a line is in exactly one tier at every
instant a reader can see.

With a segment bucket (``tidegate.logs.segment_objects``), the file is written into the
host's cache directory (it stays there as the host's copy) and uploaded between 2 and 3;
an upload that fails leaves the lines in the row store (the next round tries again). The
object's name holds a token of its own, so a move only ever removes the object it wrote.
A crash between the upload and the commit leaves an object no row names: every round
also removes those (after taking the lease: no other process can register anything
then), and uploads the files of segments written before the bucket was set.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import Text, cast, delete, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.clock import now_ms
from tidegate.config import Settings
from tidegate.db.engine import Database
from tidegate.logs import search_index, segment_index
from tidegate.logs.segment_objects import SegmentObjects
from tidegate.logs.segments import (
    NAMES,
    ROW_GROUP_LINES,
    TEMP_SUFFIX,
    segment_name,
    stored_files,
    write_segment,
)
from tidegate.models import Account, LogLine, LogSegment, SegmentLease
from tidegate.objectstore.s3 import S3Failed
from tidegate.shutdown import stop_task

log = logging.getLogger(__name__)

LEASE = "compactor"
# Segments one round writes at most (the next round goes on).
MAX_SEGMENTS_PER_ROUND = 64
# Rows read from the database at a time (PostgreSQL decodes them on the event loop).
READ_BATCH = 2_000
# Segments written before the bucket was set that one round uploads at most.
LEGACY_UPLOADS_PER_ROUND = 8

_lines = LogLine.__table__.c


def compactor_columns(dialect: str) -> tuple[Any, ...]:
    searched = (_lines.search,) if dialect == "postgresql" else ()
    return (
        _lines.id,
        _lines.ts,
        _lines.received_ms,
        _lines.host,
        _lines.app,
        _lines.level,
        _lines.env,
        _lines.file,
        _lines.ip,
        _lines.mac,
        cast(_lines.tags, Text),
        cast(_lines.meta, Text),
        _lines.line,
        cast(_lines.meta_unindexed, Text),
        _lines.host_folded,
        _lines.app_folded,
        _lines.level_folded,
        *searched,
        _lines.size_bytes,  # last: write_rows takes it from the end
    )


@dataclass(slots=True)
class RoundResult:
    claimed: bool = False
    segments: int = 0
    lines: int = 0
    orphans_removed: int = 0
    uploads_aborted: int = 0
    dropped: int = 0  # segments written and then not registered (lease lost, lines gone)
    bucket_failed: bool = False  # the bucket refused or could not be reached: round over
    legacy_uploaded: int = 0  # segments of the segment directory uploaded to the bucket


@dataclass(frozen=True, slots=True)
class CompactorConfig:
    root: Path  # where new files are written (with a bucket: the host's cache)
    after_ms: int
    window_ms: int
    max_lines: int
    lease_ms: int
    # With a bucket: the segment directory, whose registered files are uploaded.
    legacy_root: Path | None = None
    # Lines per row group of a file.
    row_group_lines: int = ROW_GROUP_LINES
    # Lines per block of its index (segment_index); None: a block per row group. A
    # finer block narrows a read to fewer rows, but DuckDB decodes whole row groups
    # (docs/log-store.md, "A finer index: measured"): the default stays a row group.
    index_block_lines: int | None = None

    @classmethod
    def of(cls, settings: Settings) -> CompactorConfig:
        bucket = bool(settings.segment_s3_bucket)
        return cls(
            root=settings.segment_cache_directory if bucket else settings.segment_directory,
            after_ms=int(settings.segment_after_s * 1000),
            window_ms=int(settings.segment_window_s * 1000),
            max_lines=settings.segment_max_lines,
            lease_ms=int(max(60.0, settings.segment_tick_s * 3) * 1000),
            legacy_root=settings.segment_directory if bucket else None,
        )


async def claim(session: AsyncSession, *, owner: str, now: int, lease_ms: int) -> bool:
    """Take (or renew) the compactor's lease; False while another process holds it."""
    result = await session.execute(
        update(SegmentLease)
        .where(
            SegmentLease.name == LEASE,
            or_(
                SegmentLease.lease_owner.is_(None),
                SegmentLease.lease_owner == owner,
                SegmentLease.lease_until_ms < now,
            ),
        )
        .values(lease_owner=owner, lease_until_ms=now + lease_ms)
    )
    return bool(getattr(result, "rowcount", 0) == 1)


async def _renew(session: AsyncSession, *, owner: str, now: int, lease_ms: int) -> bool:
    """Still the holder (and not expired): renew, inside the caller's transaction."""
    result = await session.execute(
        update(SegmentLease)
        .where(
            SegmentLease.name == LEASE,
            SegmentLease.lease_owner == owner,
            SegmentLease.lease_until_ms >= now,
        )
        .values(lease_until_ms=now + lease_ms)
    )
    return bool(getattr(result, "rowcount", 0) == 1)


async def release(db: Database, *, owner: str) -> None:
    async with db.write_sessions() as session:
        await session.execute(
            update(SegmentLease)
            .where(SegmentLease.name == LEASE, SegmentLease.lease_owner == owner)
            .values(lease_owner=None, lease_until_ms=0)
        )
        await session.commit()


async def registered_names(db: Database) -> set[str]:
    async with db.read_sessions() as session:
        return set((await session.execute(select(LogSegment.path))).scalars())


async def remove_orphans(db: Database, root: Path, registered: set[str] | None = None) -> int:
    """Remove the files under ``root`` that no registry row names (a move that crashed
    between writing its file and committing), and temporary files. Called by the lease
    holder only, before it writes anything: no file of a move in progress exists."""
    if registered is None:
        registered = await registered_names(db)
    removed = 0
    for name, path in await asyncio.to_thread(lambda: list(stored_files(root))):
        if name in registered and not name.endswith(TEMP_SUFFIX):
            continue
        with contextlib.suppress(FileNotFoundError):
            await asyncio.to_thread(path.unlink)
            removed += 1
            log.warning("removed segment file %s, which no segment names", name)
    return removed


async def remove_orphan_objects(objects: SegmentObjects, registered: set[str]) -> int:
    """Remove the bucket's segment objects no registry row names (a move that crashed
    between its upload and its commit; an object retention could not delete).
    ``registered`` is read after the lease was taken: from then on no other process can
    register a segment, so an object it does not name is never going to be named."""
    removed = 0
    for name in await objects.names():
        if name not in registered:
            await objects.delete(name)
            removed += 1
            log.warning("removed segment object %s, which no segment names", name)
    return removed


async def upload_legacy(
    db: Database,
    config: CompactorConfig,
    registered: set[str],
    *,
    owner: str,
    clock: Callable[[], int],
) -> int:
    """Uploads registered segments of the segment directory (written before the bucket
    was set), then moves each into the cache: other hosts read them from then on. A
    crash in between uploads the same file again, under its registered name."""
    objects, legacy = db.segment_objects, config.legacy_root
    if objects is None or legacy is None:
        return 0
    uploaded = 0
    for name, path in await asyncio.to_thread(lambda: list(stored_files(legacy))):
        if uploaded >= LEGACY_UPLOADS_PER_ROUND:
            break
        if name not in registered or name.endswith(TEMP_SUFFIX):
            continue
        await objects.upload(name, path)
        await asyncio.to_thread(_into_cache, path, config.root / name)
        uploaded += 1
        log.info("uploaded segment %s to the segment bucket", name)
        async with db.write_sessions() as session:  # uploads may take a while
            renewed = await claim(session, owner=owner, now=clock(), lease_ms=config.lease_ms)
            await session.commit()
        if not renewed:
            break
    return uploaded


def _into_cache(path: Path, copy: Path) -> None:
    copy.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.replace(path, copy)
    except FileNotFoundError:
        pass  # retention dropped it meanwhile
    except OSError:  # another file system: the bucket has it, a read fetches it
        path.unlink(missing_ok=True)


async def compact_round(
    db: Database,
    config: CompactorConfig,
    *,
    owner: str,
    clock: Callable[[], int] = now_ms,
    limit: int = MAX_SEGMENTS_PER_ROUND,
    accounts: Sequence[str] | None = None,
) -> RoundResult:
    """One round: the lease, orphans, then up to ``limit`` moves (of ``accounts`` only,
    when given; every account's otherwise)."""
    result = RoundResult()
    async with db.write_sessions() as session:
        result.claimed = await claim(session, owner=owner, now=clock(), lease_ms=config.lease_ms)
        await session.commit()
    if not result.claimed:
        return result
    registered = await registered_names(db)
    result.orphans_removed = await remove_orphans(db, config.root, registered)
    if db.segment_objects is not None:
        try:
            if config.legacy_root is not None:
                result.orphans_removed += await remove_orphans(db, config.legacy_root, registered)
            result.orphans_removed += await remove_orphan_objects(db.segment_objects, registered)
            result.uploads_aborted = await db.segment_objects.abort_uploads()
            if result.uploads_aborted:
                log.warning("aborted %d segment uploads left in progress", result.uploads_aborted)
            result.legacy_uploaded = await upload_legacy(
                db, config, registered, owner=owner, clock=clock
            )
        except (S3Failed, httpx.HTTPError) as error:
            log.warning("compactor: the segment bucket failed (%s); next round", error)
            result.bucket_failed = True
            return result
    if accounts is None:
        async with db.read_sessions() as session:
            accounts = list(
                (await session.execute(select(Account.id).order_by(Account.id))).scalars()
            )
    for account_id in accounts:
        if result.segments + result.dropped >= limit:
            break
        while result.segments + result.dropped < limit:
            moved = await _move_one(db, config, owner=owner, account_id=account_id, clock=clock)
            if moved is None:
                break
            if moved == _UPLOAD_FAILED:
                result.bucket_failed = True
                return result
            if moved < 0:
                result.dropped += 1
                if moved == _LEASE_LOST:
                    return result
                break
            result.segments += 1
            result.lines += moved
    return result


_UPLOAD_FAILED = -3
_LEASE_LOST = -2
_LINES_GONE = -1


async def _move_one(
    db: Database,
    config: CompactorConfig,
    *,
    owner: str,
    account_id: str,
    clock: Callable[[], int],
) -> int | None:
    """Moves one segment's worth of the account's oldest lines, if they are old enough:
    the lines moved, None when there is nothing to move, or a negative code."""
    boundary = (clock() - config.after_ms) // config.window_ms * config.window_ms
    dialect = db.write_engine.dialect.name
    async with db.read_sessions() as session:
        oldest = (
            await session.execute(
                select(_lines.id, _lines.received_ms)
                .where(_lines.account_id == account_id)
                .order_by(_lines.id)
                .limit(1)
            )
        ).first()
        if oldest is None or oldest.received_ms >= boundary:
            return None
        window = oldest.received_ms // config.window_ms * config.window_ms
        window_end = min(window + config.window_ms, boundary)
        statement = (
            select(*compactor_columns(dialect))
            .where(_lines.account_id == account_id, _lines.id >= oldest.id)
            .order_by(_lines.id)
            .limit(config.max_lines)
        )
        rows: list[tuple[Any, ...]] = []
        stream = await session.stream(statement)
        try:
            while batch := await stream.fetchmany(READ_BATCH):
                rows.extend(tuple(row) for row in batch if window <= row[2] < window_end)
        finally:
            await stream.close()
    if not rows:
        return None
    ids = rows[0][0], rows[-1][0]  # before write_rows sorts the rows by (ts, id)
    objects, cache = db.segment_objects, db.segment_cache
    name = segment_name(account_id, window, ids[0], uuid.uuid4().hex[:16] if objects else "")
    # The new file is the host's copy: no read of this process evicts it meanwhile.
    with cache.pinned(name) if cache is not None else contextlib.nullcontext():
        size, bounds, index = await asyncio.to_thread(
            write_rows,
            config.root,
            name,
            rows,
            dialect,
            row_group_lines=config.row_group_lines,
            index_block_lines=config.index_block_lines,
        )
        if objects is not None:
            try:
                await objects.upload(name, config.root / name)
            except (S3Failed, httpx.HTTPError, OSError) as error:
                log.warning("segment %s: upload failed (%s); lines stay, next round", name, error)
                await _discard(config.root, name)
                return _UPLOAD_FAILED
        moved = await _register(
            db,
            config,
            owner=owner,
            account_id=account_id,
            clock=clock,
            name=name,
            rows=rows,
            size=size,
            ids=ids,
            bounds=bounds,
            span=(window, window_end),
            index=index,
        )
    if moved < 0:
        await _discard(config.root, name)
        if objects is not None:
            # Its own object (the name's token), never a registered segment's.
            with contextlib.suppress(S3Failed, httpx.HTTPError):
                await objects.delete(name)
    elif cache is not None:
        await asyncio.to_thread(cache.evict)
    return moved


async def _register(
    db: Database,
    config: CompactorConfig,
    *,
    owner: str,
    account_id: str,
    clock: Callable[[], int],
    name: str,
    rows: list[tuple[Any, ...]],
    size: int,
    ids: tuple[int, int],
    bounds: tuple[int, int],
    span: tuple[int, int],
    index: bytes,
) -> int:
    """One transaction: renew the lease, register the segment (with its index), delete
    its lines from the row store. The lines moved, or a negative code (then nothing
    changed)."""
    first_id, last_id = ids
    min_ts, max_ts = bounds
    window, window_end = span
    dialect = db.write_engine.dialect.name
    async with db.write_sessions() as session:
        if not await _renew(session, owner=owner, now=clock(), lease_ms=config.lease_ms):
            await session.rollback()
            return _LEASE_LOST
        await session.execute(
            insert(LogSegment).values(
                account_id=account_id,
                path=name,
                window_ms=window,
                lines=len(rows),
                bytes=size,
                min_ts=min_ts,
                max_ts=max_ts,
                min_id=first_id,
                max_id=last_id,
                created_ms=clock(),
                max_received_ms=max(row[2] for row in rows),
                trigram_filters=index,
            )
        )
        gone = await _delete_moved(
            session,
            dialect=dialect,
            account_id=account_id,
            first_id=first_id,
            last_id=last_id,
            window=window,
            window_end=window_end,
        )
        if gone != len(rows):
            log.warning(
                "segment %s: %d lines written, %d deleted; not registered", name, len(rows), gone
            )
            await session.rollback()
            return _LINES_GONE
        await session.commit()
    return len(rows)


async def _delete_moved(
    session: AsyncSession,
    *,
    dialect: str,
    account_id: str,
    first_id: int,
    last_id: int,
    window: int,
    window_end: int,
) -> int:
    statement = delete(LogLine).where(
        LogLine.account_id == account_id,
        LogLine.id >= first_id,
        LogLine.id <= last_id,
        LogLine.received_ms >= window,
        LogLine.received_ms < window_end,
    )
    return await search_index.delete_lines(session, statement)


async def _discard(root: Path, name: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        await asyncio.to_thread((root / name).unlink)


def write_rows(
    root: Path,
    name: str,
    rows: list[tuple[Any, ...]],
    dialect: str,
    *,
    row_group_lines: int = ROW_GROUP_LINES,
    index_block_lines: int | None = None,
) -> tuple[int, tuple[int, int], bytes]:
    """Sorts the rows by (ts, id), writes the file and builds its index
    (``segment_index``, a block per ``index_block_lines``, by default per row group);
    the file's size, (min ts, max ts) and the index."""
    rows.sort(key=lambda row: (row[1], row[0]))
    columns: dict[str, list[Any]] = {name: [] for name in NAMES}
    lists = [columns[column] for column in NAMES]
    searched = dialect == "postgresql"
    line_folded, meta_folded = lists[17], lists[18]
    metas = columns["meta"]
    sizes = columns["size_bytes"]
    for row in rows:
        for index in range(17):
            lists[index].append(row[index])
        sizes.append(row[-1])
        line = row[12].casefold()
        line_folded.append(line)
        if searched:
            # PostgreSQL gives the meta in jsonb's spelling (a space after every key and
            # comma): the segment keeps it in the store's own (keys in jsonb's order),
            # the same value, which an export page passes through without decoding it
            # (``json_codec.in_own_spelling``). PostgreSQL keeps the search text; its
            # meta part is that spelling folded, which the search text starts after the
            # line. A search text that left the meta out (the line holds it:
            # ``store.search_text``) has none: the meta is folded from it here, as a
            # rebuilt index does.
            meta = search_index.stored_json(row[11])
            metas[-1] = meta
            search: str = row[17]
            if len(search) > len(line):
                meta_folded.append(search[len(line) + 1 :])
            else:
                meta_folded.append(None if meta is None else meta.casefold())
        else:
            # SQLite keeps no copy of it (a contentless index): the stored meta JSON
            # text is the store's own spelling.
            meta_folded.append(None if row[11] is None else row[11].casefold())
    size = write_segment(root, name, columns, row_group_lines=row_group_lines)
    filters = segment_index.build(columns, block_lines=index_block_lines or row_group_lines)
    return size, (rows[0][1], rows[-1][1]), filters


class SegmentRunner:
    """The compactor's task in a worker process (``segments_enabled``): a round every
    ``segment_tick_s``; only the lease holder moves anything."""

    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings
        self.config = CompactorConfig.of(settings)
        self.owner = uuid.uuid4().hex
        self._task: asyncio.Task[None] | None = None
        self.rounds = 0

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="tidegate-compactor")

    async def close(self) -> None:
        """Stops the rounds and gives the lease back, so that another worker's next
        round takes over at once rather than after the lease expired."""
        if self._task is not None:
            await stop_task(
                self._task, "compactor rounds", timeout_s=self.settings.shutdown_step_timeout_s
            )
            self._task = None
            try:
                await release(self.db, owner=self.owner)
            except Exception:  # the database may be gone: the lease then expires
                log.warning("compactor: could not release the lease", exc_info=True)

    async def _run(self) -> None:
        while True:
            try:
                result = await compact_round(self.db, self.config, owner=self.owner)
                if result.segments:
                    log.info("compactor: %d segments, %d lines", result.segments, result.lines)
            except asyncio.CancelledError:
                raise
            except Exception:  # the database may be down for a while: try next tick
                log.warning("compactor round failed", exc_info=True)
            self.rounds += 1
            await asyncio.sleep(self.settings.segment_tick_s)

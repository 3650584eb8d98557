"""A host's copies of the segments of a segment bucket (docs/log-store.md, "Segments in
object storage").

DuckDB reads local files (its ``httpfs`` extension is downloaded at run time, which a
server without Internet access cannot do), so a read first makes each segment it opens
present here: ``<cache>/<name>``, downloaded from the bucket on first use. A segment
never changes once registered, so a copy is valid for as long as the segment exists.

- **Off the event loop**: copies are fetched by the reads themselves, in the export
  threads; a download runs the S3 client on a loop of the calling thread's own and
  streams the body into a file beside the cache (``.partial/``), fsynced, then renamed
  into place: a reader holds one chunk of it, never the file, and a copy is never seen
  half written.
- **Downloaded once**: a download holds an exclusive ``flock`` on one of
  ``LOCK_STRIPES`` lock files chosen by the name, so concurrent reads of a missing
  segment, in threads or processes of the host, wait for the first and find its copy.
- **Bounded**: after a download (and after the compactor adds a copy), the least
  recently used copies (by modification time, which each read sets) go until the cache
  holds at most ``max_bytes``, except the copies this process's reads are using, so a
  read whose segments alone exceed the bound keeps them until it ends. Another
  process's read whose copy goes under it fails to open it and starts over (the fetch
  downloads it again).
- Copies of dropped segments are removed by retention and the compactor's orphan sweep
  on their host, and by the bound on the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import tempfile
import threading
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO, Final

from tidegate.clock import now_ms
from tidegate.config import Settings
from tidegate.db.engine import Database
from tidegate.logs.segment_objects import SegmentBucket, SegmentObjects, http_client
from tidegate.logs.segments import SegmentMissing, SegmentUnavailable, stored_files
from tidegate.objectstore.s3 import S3Failed, get_object

log = logging.getLogger(__name__)

LOCK_STRIPES: Final = 64
PARTIAL: Final = ".partial"
LOCKS: Final = ".locks"
# A download whose partial file was not written to for this long died with its process.
STALE_PARTIAL_MS: Final = 3_600_000


class SegmentCache:
    """The copies of one host, in ``root``; ``legacy_root``: the segment directory of
    segments written before the bucket was set (read there until the compactor has
    uploaded them)."""

    def __init__(
        self,
        root: Path,
        *,
        max_bytes: int,
        bucket: SegmentBucket,
        legacy_root: Path | None = None,
    ) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self.bucket = bucket
        self.legacy_root = legacy_root
        self._lock = threading.Lock()
        self._pins: dict[str, int] = {}
        self.downloads = 0  # by this process, for tests and measurements

    @contextlib.contextmanager
    def reading(self) -> Iterator[Callable[[str], Path]]:
        """One read's access to the segments: ``fetch(name)`` gives the path of the
        segment's copy, downloading it when missing; the copies the read fetched are
        kept from eviction by this process until the block ends (then, if it downloaded
        any, the cache is brought back within its bound)."""
        held: dict[str, Path | None] = {}  # every name pinned, with its path once fetched
        downloads = self.downloads

        def fetch(name: str) -> Path:
            if name not in held:
                self._pin(name)
                held[name] = None
            path = held[name]
            if path is None:
                path = held[name] = self._fetch(name)
            return path

        try:
            yield fetch
        finally:
            for name in held:
                self._unpin(name)
            if self.downloads != downloads:
                self.evict()

    @contextlib.contextmanager
    def pinned(self, name: str) -> Iterator[Path]:
        """The path of the copy ``name`` (the compactor's new file), kept from eviction
        by this process within the block."""
        self._pin(name)
        try:
            yield self.root / name
        finally:
            self._unpin(name)

    def _pin(self, name: str) -> None:
        with self._lock:
            self._pins[name] = self._pins.get(name, 0) + 1

    def _unpin(self, name: str) -> None:
        with self._lock:
            count = self._pins.pop(name, 1) - 1
            if count > 0:
                self._pins[name] = count

    def _fetch(self, name: str) -> Path:
        """Blocking (an export thread): the copy's path, downloaded if missing."""
        if self.legacy_root is not None:
            legacy = self.legacy_root / name
            if legacy.is_file():
                return legacy
        path = self.root / name
        if _touch(path):
            return path
        with self._download_lock(name):
            if _touch(path):  # another thread or process downloaded it meanwhile
                return path
            self._download(name, path)
        self.evict()
        return path

    @contextlib.contextmanager
    def _download_lock(self, name: str) -> Iterator[None]:
        directory = self.root / LOCKS
        directory.mkdir(parents=True, exist_ok=True)
        stripe = zlib.crc32(name.encode()) % LOCK_STRIPES
        descriptor = os.open(directory / str(stripe), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            yield
        finally:
            os.close(descriptor)  # releases the lock

    def _download(self, name: str, path: Path) -> None:
        partial = self.root / PARTIAL
        partial.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=partial, suffix=".parquet")
        try:
            with os.fdopen(descriptor, "wb") as handle:
                try:
                    asyncio.run(self._get(name, handle))
                except S3Failed as error:
                    if error.status == 404:
                        raise SegmentMissing(f"segment {name!r}: {error}") from None
                    raise SegmentUnavailable(f"segment {name!r}: {error}") from None
                handle.flush()
                os.fsync(handle.fileno())
            path.parent.mkdir(parents=True, exist_ok=True)
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
            raise
        with self._lock:
            self.downloads += 1

    async def _get(self, name: str, handle: BinaryIO) -> None:
        async with http_client() as http:
            await get_object(self.bucket.client(http), self.bucket.key(name), handle)

    def evict(self) -> int:
        """Removes the least recently used copies beyond ``max_bytes`` (not those this
        process's reads are using) and partial downloads long dead; how many copies went.
        Blocking: call it off the event loop."""
        copies: list[tuple[int, int, str, Path]] = []
        total = 0
        for name, path in stored_files(self.root):
            with contextlib.suppress(FileNotFoundError):
                status = path.stat()
                copies.append((status.st_mtime_ns, status.st_size, name, path))
                total += status.st_size
        self._remove_dead_partials()
        removed = 0
        if total <= self.max_bytes:
            return removed
        copies.sort()
        with self._lock:
            pinned = set(self._pins)
        for _, size, name, path in copies:
            if total <= self.max_bytes:
                break
            if name in pinned:
                continue
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed += 1
            total -= size
        if total > self.max_bytes:
            log.info("segment cache: %d bytes held by reads (bound %d)", total, self.max_bytes)
        return removed

    def _remove_dead_partials(self) -> None:
        partial = self.root / PARTIAL
        if not partial.is_dir():
            return
        dead_before_ns = (now_ms() - STALE_PARTIAL_MS) * 1_000_000
        for path in partial.iterdir():
            with contextlib.suppress(FileNotFoundError):
                if path.stat().st_mtime_ns < dead_before_ns:
                    path.unlink()

    def discard(self, name: str) -> None:
        """Removes the copy of a dropped segment (blocking)."""
        with contextlib.suppress(FileNotFoundError):
            (self.root / name).unlink()

    def size(self) -> int:
        """Bytes of copies held (blocking)."""
        total = 0
        for _, path in stored_files(self.root):
            with contextlib.suppress(FileNotFoundError):
                total += path.stat().st_size
        return total


def _touch(path: Path) -> bool:
    """Marks the copy used now (least recently used goes first); False if missing."""
    try:
        os.utime(path)
    except FileNotFoundError:
        return False
    return True


def attach_segment_storage(db: Database, settings: Settings) -> None:
    """Where ``db``'s readers, compactor and retention find segments: the segment
    directory, and with a segment bucket the bucket and this host's cache of it."""
    db.segment_dir = settings.segment_directory
    bucket = SegmentBucket.of(settings)
    if bucket is not None:
        db.segment_cache = SegmentCache(
            settings.segment_cache_directory,
            max_bytes=settings.segment_cache_bytes,
            bucket=bucket,
            legacy_root=settings.segment_directory,
        )
        db.segment_objects = SegmentObjects(bucket)

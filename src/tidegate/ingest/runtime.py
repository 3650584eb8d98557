"""What ingestion keeps per worker process: compiled exclusion rules, the bound on work
in flight, the writer of lines (group commit, shared with the pipeline's log store),
the parsing templates' match counts, and the retention job."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar

import anyio
import anyio.to_thread

from tidegate.config import Settings
from tidegate.db.engine import Database
from tidegate.errors import ServiceUnavailable
from tidegate.ingest.retention import run_retention
from tidegate.logs.exclusion import RuleCache
from tidegate.logs.template_counts import TemplateCounts
from tidegate.logs.writer import DEFAULT_DELAY_S, DEFAULT_MAX_LINES, LineWriter
from tidegate.shutdown import close_step, stop_task

T = TypeVar("T")

DEFAULT_MAX_IN_FLIGHT = 64
DEFAULT_PARSE_THREADS = 2


class InFlightLimit:
    """At most ``limit`` ingest requests of this worker between parsing and commit; past
    that a request is refused at once (503 with ``Retry-After``) rather than queued, so a
    slow database turns into back-pressure on the clients, which retry on 503, instead
    of into memory."""

    __slots__ = ("in_flight", "limit", "retry_after_s")

    def __init__(self, limit: int, *, retry_after_s: int = 1) -> None:
        self.limit = max(1, limit)
        self.retry_after_s = retry_after_s
        self.in_flight = 0

    @contextlib.contextmanager
    def slot(self) -> Iterator[None]:
        if self.in_flight >= self.limit:
            raise ServiceUnavailable(
                "Too many ingest requests in flight; retry shortly",
                headers={"Retry-After": str(self.retry_after_s)},
            )
        self.in_flight += 1
        try:
            yield
        finally:
            self.in_flight -= 1


@dataclass(slots=True)
class IngestRuntime:
    limit: InFlightLimit = field(default_factory=lambda: InFlightLimit(DEFAULT_MAX_IN_FLIGHT))
    rules: RuleCache = field(default_factory=RuleCache)
    template_counts: TemplateCounts = field(default_factory=TemplateCounts)
    retention_interval_s: float = 3600.0
    parse_threads: int = DEFAULT_PARSE_THREADS
    group_commit_s: float = DEFAULT_DELAY_S
    group_commit_lines: int = DEFAULT_MAX_LINES
    _writer: LineWriter | None = None
    _retention: asyncio.Task[None] | None = None
    _db: Database | None = None
    _parse_limiter: anyio.CapacityLimiter | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> IngestRuntime:
        return cls(
            limit=InFlightLimit(settings.ingest_max_in_flight),
            # No sweeps: an interval of 0 (the settings' own is always positive).
            retention_interval_s=(
                settings.retention_interval_s if settings.retention_enabled else 0.0
            ),
            parse_threads=max(1, settings.ingest_parse_threads),
            group_commit_s=settings.ingest_group_commit_ms / 1000,
            group_commit_lines=settings.ingest_group_commit_lines,
            template_counts=TemplateCounts(flush_s=settings.template_counts_flush_s),
        )

    @property
    def writer(self) -> LineWriter:
        """The worker's writer of lines (made by ``start``)."""
        if self._writer is None:
            raise RuntimeError("IngestRuntime.start was not called")
        return self._writer

    async def off_loop(self, work: Callable[[], T]) -> T:
        """Run CPU-heavy ``work`` (inflate, parse, build, exclusion rules) in a worker
        thread, at most ``parse_threads`` at once per worker: the loop stays free for
        every tenant, and the parsing memory of a worker is bounded by that count."""
        if self._parse_limiter is None:
            # Made on first use: a limiter belongs to the running event loop.
            self._parse_limiter = anyio.CapacityLimiter(self.parse_threads)
        return await anyio.to_thread.run_sync(work, limiter=self._parse_limiter)

    def start(self, db: Database) -> None:
        self._db = db
        self.template_counts.start(db)
        if self._writer is None:
            self._writer = LineWriter(
                db, delay_s=self.group_commit_s, max_lines=self.group_commit_lines
            )
        if self.retention_interval_s > 0 and self._retention is None:
            self._retention = asyncio.create_task(
                run_retention(db=db, interval_s=self.retention_interval_s),
                name="tidegate-retention",
            )

    async def close(self) -> None:
        """Commit the pending lines, flush the template counts and stop the retention
        job."""
        if self._writer is not None:
            await close_step("line writer (pending lines)", self._writer.close)
            self._writer = None
        if self._db is not None:
            await close_step(
                "parsing template counts", partial(self.template_counts.close, self._db)
            )
            self._db = None
        if self._retention is not None:
            await stop_task(self._retention, "retention job")
            self._retention = None

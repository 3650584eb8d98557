"""The syslog listener: a TCP server (TLS when a certificate is configured) inside each
worker of ``tidegate serve``, started by the app's lifespan when
``TIDEGATE_SYSLOG_PORT`` is set (docs/syslog.md).

Every worker listens on the same port with ``SO_REUSEPORT``: the kernel spreads new
connections over the workers, and a worker that stops takes only its own connections
with it. Each connection is read by one task: its bytes are cut into frames
(``framing``), gathered into a batch while they keep coming (at most
``MAX_BATCH_LINES`` lines or ``MAX_BATCH_BYTES``, or ``BATCH_WAIT_S`` after the last
bytes), and the batch is stored before the next bytes are read, so a fast sender meets
TCP back-pressure rather than growing this worker's memory. Per connection the worker
holds at most one line limit of unframed bytes and one batch; connections are capped
(``TIDEGATE_SYSLOG_MAX_CONNECTIONS``) and closed after
``TIDEGATE_SYSLOG_IDLE_TIMEOUT_S`` without a byte.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import time
from collections import Counter

from tidegate.app_state import AppState
from tidegate.config import Settings
from tidegate.metrics import SYSLOG_CONNECTIONS, SYSLOG_LINES
from tidegate.syslog.framing import Frame, Framer
from tidegate.syslog.service import REFUSED, Outcome, store_frames

log = logging.getLogger("tidegate.syslog")

__all__ = ["SyslogListener", "tls_context"]

READ_BYTES = 64 * 1024
MAX_BATCH_LINES = 1_000
MAX_BATCH_BYTES = 256 * 1024
BATCH_WAIT_S = 0.05
TLS_HANDSHAKE_S = 10.0
# Dropped lines are logged at most this often per worker (counts, never keys).
REPORT_EVERY_S = 10.0


def tls_context(*, cert: str, key: str) -> ssl.SSLContext:
    """The server's TLS context; a certificate or key that cannot be read fails start."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context


def _peer(writer: asyncio.StreamWriter) -> str:
    name = writer.get_extra_info("peername")
    if isinstance(name, tuple) and name:
        return str(name[0])
    return "unknown"


class SyslogListener:
    def __init__(self, *, state: AppState, settings: Settings) -> None:
        self.state = state
        self.host = settings.syslog_host
        self.requested_port = settings.syslog_port or 0
        self.max_line = settings.syslog_max_line_bytes
        self.max_connections = settings.syslog_max_connections
        self.idle_timeout_s = settings.syslog_idle_timeout_s
        cert, key = settings.syslog_tls_cert, settings.syslog_tls_key
        self.tls = tls_context(cert=str(cert), key=str(key)) if cert and key else None
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._unreported: Counter[str] = Counter()
        self._reported_at = float("-inf")

    @property
    def port(self) -> int:
        """The port listened on (the configured one, or the one picked for port 0)."""
        if self._server is None or not self._server.sockets:
            raise RuntimeError("the syslog listener is not started")
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._connection,
            self.host,
            self.requested_port,
            # Port 0 (tests) is one listener's own: with SO_REUSEPORT the kernel may
            # pick a port another listener of this user holds, and the two would share it.
            reuse_port=self.requested_port != 0,
            ssl=self.tls,
            ssl_handshake_timeout=TLS_HANDSHAKE_S if self.tls else None,
            limit=READ_BYTES,
        )
        log.info("syslog listener on %s:%d%s", self.host, self.port, " (TLS)" if self.tls else "")

    async def close(self) -> None:
        """Stop accepting; each open connection stores what it has read, then closes."""
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is None or len(self._connections) >= self.max_connections:
            SYSLOG_CONNECTIONS.labels("refused").inc()
            await _close(writer)
            return
        SYSLOG_CONNECTIONS.labels("accepted").inc()
        self._connections.add(task)
        try:
            await self._read(reader, _peer(writer))
        finally:
            self._connections.discard(task)
            await _close(writer)

    async def _read(self, reader: asyncio.StreamReader, peer: str) -> None:
        framer = Framer(max_frame=self.max_line)
        batch: list[Frame] = []
        size = 0
        try:
            while True:
                try:
                    async with asyncio.timeout(BATCH_WAIT_S if batch else self.idle_timeout_s):
                        data = await reader.read(READ_BYTES)
                except TimeoutError:
                    if not batch:
                        return  # idle
                    await self._store(batch, peer)
                    batch, size = [], 0
                    continue
                if not data:
                    break
                for frame in framer.feed(data):
                    batch.append(frame)
                    size += len(frame.data)
                if len(batch) >= MAX_BATCH_LINES or size >= MAX_BATCH_BYTES:
                    await self._store(batch, peer)
                    batch, size = [], 0
            batch.extend(framer.close())
        except OSError as error:  # a reset, a broken TLS record
            log.info("syslog connection from %s ended: %s", peer, type(error).__name__)
        except asyncio.CancelledError:
            # The server stops: what was read is stored first (close_step bounds it).
            if batch:
                await self._store(batch, peer)
            raise
        if batch:
            await self._store(batch, peer)

    async def _store(self, frames: list[Frame], peer: str) -> None:
        try:
            outcome = await store_frames(state=self.state, frames=frames, peer=peer)
        except Exception:  # any: the store failing must not end the connection
            SYSLOG_LINES.labels("failed").inc(len(frames))
            log.exception("syslog: %d lines from %s could not be stored", len(frames), peer)
            return
        if outcome.accepted:
            SYSLOG_LINES.labels("accepted").inc(outcome.accepted)
        for reason, count in outcome.dropped.items():
            SYSLOG_LINES.labels(reason).inc(count)
        if outcome.dropped:
            self._report(outcome, peer)

    def _report(self, outcome: Outcome, peer: str) -> None:
        """Log dropped lines by reason, at most once per ``REPORT_EVERY_S`` (a hostile
        sender must not flood the log). The key's value is never logged."""
        for reason, count in outcome.dropped.items():
            if reason != REFUSED:
                self._unreported[reason] += count
        for refusal, count in outcome.refusals.items():
            self._unreported[f"{REFUSED} ({refusal})"] += count
        now = time.monotonic()
        if now - self._reported_at < REPORT_EVERY_S:
            return
        self._reported_at = now
        summary = ", ".join(f"{count} {reason}" for reason, count in self._unreported.items())
        self._unreported.clear()
        log.warning("syslog: lines dropped (the latest from %s): %s", peer, summary)


async def _close(writer: asyncio.StreamWriter) -> None:
    writer.close()
    with contextlib.suppress(Exception):
        async with asyncio.timeout(TLS_HANDSHAKE_S):
            await writer.wait_closed()

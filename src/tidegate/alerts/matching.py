"""The CPU half of an evaluation, as one pure function of plain data: the watched
views, their channels' stored states, a batch of lines and the time. It runs in a
process of its own (``MatchingPool``), so matching every line against every alert
never holds the server process's interpreter (its event loop and its ingest threads).

Views whose filters are the same (query, hosts, apps, levels, tags) are matched once
per line between them."""

from __future__ import annotations

import asyncio
import ctypes
import logging
import multiprocessing
import os
import signal
import sqlite3
import sys
import threading
import time
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

from tidegate import json_codec
from tidegate.alerts.channels import Channel
from tidegate.alerts.windows import ChannelWindow, Firing, WindowState
from tidegate.db.sqlite_connect import READ_OFF_LOOP_WAIT_S, open_reader
from tidegate.logs.filtering import LineFilter, parse_line_filter
from tidegate.logs.record import public_record

StateKey = tuple[str, str]  # (view id, channel key)
# A line as the cursor reads it: a tuple in ``cursor.NAMES`` order (plain tuples cost
# the server the least to build and to hand over).
Row = tuple[Any, ...]
(
    ID, ACCOUNT_ID, TS, RECEIVED_MS, HOST, APP, LEVEL, ENV, FILE, IP, MAC, TAGS, META, LINE,
    META_UNINDEXED,
) = range(15)  # fmt: skip
FilterKey = tuple[str, str, str, str, str]
_MAX_CACHED_FILTERS = 4096
log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ViewSpec:
    view_id: str
    account_id: str
    name: str
    query: str
    hosts: tuple[str, ...]
    apps: tuple[str, ...]
    levels: tuple[str, ...]
    tags: tuple[str, ...]
    # Lines received before the view's alerts were last changed are not its business.
    since_ms: int
    channels: tuple[tuple[str, dict[str, Any]], ...]  # (channel key, Channel.stored())
    # The alert_window_scale setting (1 but in tests).
    window_scale: float = 1.0
    # ``query`` with its makers' group scopes added (tidegate.alerts.makers): what the
    # lines must match; ``query`` itself is what the notifications show.
    matched_query: str | None = None

    @property
    def filter_key(self) -> FilterKey:
        return (
            self.query if self.matched_query is None else self.matched_query,
            ",".join(self.hosts),
            ",".join(self.apps),
            ",".join(self.levels),
            ",".join(self.tags),
        )


@dataclass(slots=True)
class Outcome:
    states: dict[StateKey, dict[str, Any]]
    firings: list[tuple[str, str, Firing]]  # (view id, channel key, firing)


_filters: dict[FilterKey, LineFilter | None] = {}


def _filter(key: FilterKey) -> LineFilter | None:
    if key not in _filters:
        if len(_filters) >= _MAX_CACHED_FILTERS:
            _filters.clear()
        query, hosts, apps, levels, tags = key
        try:
            _filters[key] = parse_line_filter(
                hosts=hosts,
                apps=apps,
                levels=levels,
                query=query or None,
                tags=tags,
                limit_work=False,  # a view saved before the limits still matches
            )
        except Exception:  # saved before a syntax change: such a view cannot match
            _filters[key] = None
    return _filters[key]


def _decoded(text: Any) -> Any:
    """A JSON column read as its text (``cursor.read_batch``); None when absent."""
    if text is None or not isinstance(text, str):
        return text
    try:
        return json_codec.loads(text)  # NaN reads as null, the rest of the meta kept
    except ValueError:
        return None


def _record(row: Row, meta: Any, tags: Any) -> dict[str, Any]:
    return public_record(
        line=row[LINE],
        ts=row[TS],
        host=row[HOST],
        app=row[APP],
        level=row[LEVEL],
        env=row[ENV],
        file=row[FILE],
        ip=row[IP],
        mac=row[MAC],
        tags=tags,
        meta=meta,
        line_id=row[ID],
        meta_unindexed=_decoded_object(row[META_UNINDEXED]),
    )


def _decoded_object(text: Any) -> dict[str, Any] | None:
    value = _decoded(text)
    return value if isinstance(value, dict) else None


def evaluate_batch(
    specs: list[ViewSpec],
    states: dict[StateKey, dict[str, Any]],
    rows: list[Row],
    now_ms: int,
    horizon_ms: int | None,
) -> Outcome:
    """Feed each line (in id order) to the channels of every view it matches, then,
    when ``horizon_ms`` is given (the batch caught up), close what ended by then."""
    windows: dict[StateKey, ChannelWindow] = {}
    by_account: dict[str, list[tuple[FilterKey, list[tuple[ViewSpec, list[ChannelWindow]]]]]] = {}
    groups: dict[tuple[str, FilterKey], list[tuple[ViewSpec, list[ChannelWindow]]]] = {}
    for spec in specs:
        channel_windows = []
        for key, stored in spec.channels:
            window = ChannelWindow(
                Channel.from_stored(stored),
                WindowState.load(states.get((spec.view_id, key))),
                now_ms=max(now_ms, spec.since_ms),
                scale=spec.window_scale,
            )
            windows[(spec.view_id, key)] = window
            channel_windows.append(window)
        group_key = (spec.account_id, spec.filter_key)
        if group_key not in groups:
            groups[group_key] = []
            by_account.setdefault(spec.account_id, []).append((spec.filter_key, groups[group_key]))
        groups[group_key].append((spec, channel_windows))
    for row in rows:
        views = by_account.get(row[ACCOUNT_ID])
        if not views:
            continue
        record: dict[str, Any] | None = None
        meta = _decoded_object(row[META])
        tags = _decoded(row[TAGS])
        tags = tags if isinstance(tags, list) else None
        for filter_key, members in views:
            line_filter = _filter(filter_key)
            if line_filter is None or not line_filter.matches(
                line=row[LINE],
                host=row[HOST],
                app=row[APP],
                level=row[LEVEL],
                file=row[FILE],
                meta=meta,
                tags=tags,
            ):
                continue
            for spec, channel_windows in members:
                if row[RECEIVED_MS] < spec.since_ms:
                    continue
                if record is None:
                    record = _record(row, meta, tags)
                for window in channel_windows:
                    window.on_line(row[RECEIVED_MS], record)
    if horizon_ms is not None:
        for window in windows.values():
            window.advance(horizon_ms)
    return Outcome(
        states={key: window.state.dump() for key, window in windows.items()},
        firings=[
            (key[0], key[1], firing) for key, window in windows.items() for firing in window.firings
        ],
    )


_SQLITE_LINES = (
    "SELECT id, account_id, ts, received_ms, host, app, level, env, file, ip, mac, "
    "CAST(tags AS TEXT), CAST(meta AS TEXT), line, CAST(meta_unindexed AS TEXT) FROM log_lines "
    "WHERE id > ? AND id <= ? ORDER BY id LIMIT ?"
)
_readers: dict[str, sqlite3.Connection] = {}


@dataclass(slots=True)
class SqliteBatch:
    outcome: Outcome
    rows: int
    last_line_id: int
    full: bool


def evaluate_sqlite_batch(
    path: str,
    specs: list[ViewSpec],
    states: dict[StateKey, dict[str, Any]],
    after_id: int,
    until_id: int,
    limit: int,
    now_ms: int,
    settle_ms: int,
) -> SqliteBatch:
    """SQLite: read the lines after ``after_id`` and up to ``until_id`` here too,
    through a read-only connection of this process, so the server process does not
    even read them. (The writer numbers lines under the write lock: ids commit in
    order, no gaps.) ``until_id`` was the last line when ``specs`` were read: a line
    committed since may be for views changed since, and waits for the next batch."""
    reader = _readers.get(path)
    if reader is None:
        # Used by whichever thread of the child's pool runs the batch.
        reader = open_reader(path, wait_s=READ_OFF_LOOP_WAIT_S, any_thread=True)
        _readers[path] = reader
    cursor = reader.execute(_SQLITE_LINES, (after_id, until_id, limit))
    try:
        rows: list[Row] = cursor.fetchall()
    finally:
        cursor.close()
    full = len(rows) >= limit
    outcome = evaluate_batch(specs, states, rows, now_ms, None if full else now_ms - settle_ms)
    return SqliteBatch(
        outcome=outcome,
        rows=len(rows),
        last_line_id=rows[-1][ID] if rows else after_id,
        full=full,
    )


class MatchingPool:
    """Runs ``evaluate_batch`` in one child process (started on first use), or in a
    thread when ``in_process`` (tests, or an operator who wants no extra process)."""

    def __init__(self, *, in_process: bool = False) -> None:
        self.in_process = in_process
        self._pool: Executor | None = None

    async def run(
        self,
        specs: list[ViewSpec],
        states: dict[StateKey, dict[str, Any]],
        rows: list[Row],
        now_ms: int,
        horizon_ms: int | None,
    ) -> Outcome:
        if self.in_process:
            return await asyncio.to_thread(evaluate_batch, specs, states, rows, now_ms, horizon_ms)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._executor(), evaluate_batch, specs, states, rows, now_ms, horizon_ms
        )

    async def run_sqlite(
        self,
        path: str,
        specs: list[ViewSpec],
        states: dict[StateKey, dict[str, Any]],
        after_id: int,
        until_id: int,
        limit: int,
        now_ms: int,
        settle_ms: int,
    ) -> SqliteBatch:
        args = (path, specs, states, after_id, until_id, limit, now_ms, settle_ms)
        if self.in_process:
            return await asyncio.to_thread(evaluate_sqlite_batch, *args)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor(), evaluate_sqlite_batch, *args)

    def _executor(self) -> Executor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                max_workers=1,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=die_with_parent,
                initargs=(os.getpid(),),
            )
        return self._pool

    async def aclose(self, *, timeout_s: float = 10.0) -> None:
        """Stop the child process: let it finish the batch in hand for up to
        ``timeout_s``, then terminate it (and kill it if even that is ignored)."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        processes = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        await asyncio.to_thread(_reap, processes, timeout_s)

    def close(self) -> None:
        """Blocking ``aclose`` (tests and scripts without a running loop)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            processes = list((getattr(pool, "_processes", None) or {}).values())
            pool.shutdown(wait=False, cancel_futures=True)
            _reap(processes, 10.0)


def _reap(processes: list[Any], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
    for process in processes:
        if process.is_alive():
            log.warning("alert matching process %s did not stop; terminating it", process.pid)
            process.terminate()
            process.join(1.0)
            if process.is_alive():
                process.kill()
                process.join(1.0)


_PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int) -> None:
    """The child's initializer: it must not outlive the server, even one killed
    outright (SIGKILL runs no shutdown). On Linux the kernel sends it SIGKILL when its
    parent dies (prctl PR_SET_PDEATHSIG); elsewhere, and as a second line, a daemon
    thread exits once the parent is gone (the child is reparented: its ppid changes)."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:  # the parent died before the signal was asked for
        os._exit(0)
    threading.Thread(
        target=_watch_parent, args=(parent_pid,), name="tidegate-parent-watch", daemon=True
    ).start()


def _watch_parent(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(1.0)
    os._exit(0)

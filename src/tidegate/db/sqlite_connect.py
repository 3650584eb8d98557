"""Every SQLite connection tidegate opens, from one place, as one of two kinds.

- **The writer**: WAL, the configured ``synchronous``, foreign keys on, autocommit
  (BEGIN IMMEDIATE and COMMIT are the caller's, so concurrent writers queue on the
  lock instead of failing), and up to ``WRITE_WAIT_S`` to get the write lock. The write
  engine's connections (aiosqlite, through ``apply_writer_settings``) and the group
  writer of lines (the stdlib driver on a thread of its own) are writers.
- **A reader**: autocommit (each statement its own snapshot; no read transaction stays
  open to hold back checkpoints), ``query_only`` where nothing may write through it,
  and a wait for a lock that fits where it runs. In WAL mode a read never waits for
  the write lock; only a WAL reset or recovery can make it wait, briefly. The hot
  reads on the event loop (``Database.fetch``) wait at most ``READ_ON_LOOP_WAIT_S``
  (they hold up every request of the worker meanwhile); a read on a thread or in a
  process of its own (export pages, the alert matcher) up to ``READ_OFF_LOOP_WAIT_S``;
  the read engine's connections keep the 15 s they have always had
  (``READ_ENGINE_WAIT_S``).

Schema migrations open their own engine (``db.migrate``) with the writer's wait and
without the writer's settings: alembic's batch operations rebuild tables, which must
not run with foreign keys enforced.
"""

from __future__ import annotations

import sqlite3
from typing import Any

SYNCHRONOUS_MODES = ("OFF", "NORMAL", "FULL", "EXTRA")

WRITE_WAIT_S = 15.0
READ_ON_LOOP_WAIT_S = 1.0
READ_OFF_LOOP_WAIT_S = 15.0
# The read engine's own connections (inline on the loop): the 15 s they have always had.
READ_ENGINE_WAIT_S = 15.0


def apply_writer_settings(dbapi_connection: Any, synchronous: str) -> None:
    """Make a fresh DB-API connection a writer (also used on aiosqlite's connections)."""
    if synchronous not in SYNCHRONOUS_MODES:
        raise ValueError(f"synchronous must be one of {SYNCHRONOUS_MODES}")
    # Transaction control is the caller's: the driver must not emit BEGIN of its own.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA synchronous={synchronous}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={int(WRITE_WAIT_S * 1000)}")
    cursor.close()


def open_writer(path: str, synchronous: str) -> sqlite3.Connection:
    """A writer with the stdlib driver, for a thread of its own."""
    connection = sqlite3.connect(path, timeout=WRITE_WAIT_S, isolation_level=None)
    apply_writer_settings(connection, synchronous)
    return connection


def open_reader(
    path: str, *, wait_s: float, query_only: bool = True, any_thread: bool = False
) -> sqlite3.Connection:
    """A reader with the stdlib driver.

    ``wait_s``: ``READ_ON_LOOP_WAIT_S`` or ``READ_OFF_LOOP_WAIT_S``, by where it runs.
    ``query_only=False`` only for the read engine's connections, which SQLAlchemy also
    uses for the session's own bookkeeping. ``any_thread``: the connection is handed
    between threads (by the caller's own locking or by the loop's single thread)."""
    connection = sqlite3.connect(
        path, timeout=wait_s, isolation_level=None, check_same_thread=not any_thread
    )
    if query_only:
        connection.execute("PRAGMA query_only=ON")
    return connection

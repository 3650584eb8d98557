"""The SQLite file's own handling: making sure it exists must never touch SQLite's locks."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tidegate.db import migrate
from tidegate.db.engine import ensure_sqlite_dir
from tidegate.db.migrate import upgrade_database

_OPEN_AND_CLOSE = """
import sqlite3, sys
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("SELECT count(*) FROM t").fetchone()
connection.close()
"""


def test_ensuring_an_open_database_keeps_its_locks(tmp_path: Path) -> None:
    """Closing any descriptor of a file drops every POSIX lock the process holds on it.
    In WAL mode each open connection holds a shared lock on the database file; without
    it, another process closing its last connection believes it is the last one,
    checkpoints and deletes the WAL under this process's feet (seen as "disk I/O error"
    and "database disk image is malformed" when an app was started beside an open one)."""
    path = tmp_path / "tidegate.sqlite3"
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("PRAGMA journal_mode=WAL")
        holder.execute("CREATE TABLE t (x)")
        holder.execute("INSERT INTO t VALUES (1)")
        ensure_sqlite_dir(f"sqlite+aiosqlite:///{path}")
        subprocess.run([sys.executable, "-c", _OPEN_AND_CLOSE, str(path)], check=True)
        # The other process was not the last connection: the WAL must still be there.
        assert Path(f"{path}-wal").exists()
        assert holder.execute("SELECT count(*) FROM t").fetchone() == (1,)
    finally:
        holder.close()


def test_a_new_database_file_is_private(tmp_path: Path) -> None:
    path = tmp_path / "data" / "tidegate.sqlite3"
    ensure_sqlite_dir(f"sqlite+aiosqlite:///{path}")
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700


def test_a_migrated_database_is_in_wal_mode_from_the_start(tmp_path: Path) -> None:
    """A new database left in rollback mode until a writer's first connection made every
    read of another process wait for every writer in the server's first seconds."""
    path = tmp_path / "tidegate.sqlite3"
    asyncio.run(upgrade_database(f"sqlite+aiosqlite:///{path}"))
    header = path.read_bytes()[:20]
    assert (header[18], header[19]) == (2, 2)  # the file format's WAL read and write versions


def test_a_migration_that_finds_the_database_locked_tries_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """SQLite answers "database is locked" without waiting in a few cases (another process
    cleaning up the WAL as it closes the file's last connection, WAL recovery): a server
    starting beside another must not exit on it. Here a lock held past the wait stands in
    for those; it is released only once the migration has failed on it."""
    path = tmp_path / "tidegate.sqlite3"
    url = f"sqlite+aiosqlite:///{path}"
    asyncio.run(upgrade_database(url))
    monkeypatch.setattr(migrate, "WRITE_WAIT_S", 0.05)
    monkeypatch.setattr(migrate, "MIGRATION_DEADLINE_S", 60.0)
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")

    async def run() -> None:
        task = asyncio.create_task(upgrade_database(url))
        while not any("locked" in record.getMessage() for record in caplog.records):
            assert not task.done(), task.exception()
            await asyncio.sleep(0.01)
        holder.close()
        await task

    try:
        with caplog.at_level(logging.WARNING, logger="tidegate.db"):
            asyncio.run(run())
    finally:
        holder.close()

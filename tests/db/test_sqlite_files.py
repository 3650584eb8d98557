"""The SQLite file's own handling: making sure it exists must never touch SQLite's locks."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from tidegate.db.engine import ensure_sqlite_dir

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

"""One way to open SQLite: `tidegate.db.sqlite_connect` opens every connection of the
package, as a writer or as a reader, each with the wait that fits where it runs."""

from __future__ import annotations

import ast
import sqlite3
import threading
from pathlib import Path

import pytest

import tidegate
from tidegate.db.sqlite_connect import (
    READ_OFF_LOOP_WAIT_S,
    READ_ON_LOOP_WAIT_S,
    WRITE_WAIT_S,
    apply_writer_settings,
    open_reader,
    open_writer,
)

PACKAGE = Path(tidegate.__file__).parent
FACTORY = PACKAGE / "db" / "sqlite_connect.py"


def _connects(tree: ast.AST) -> list[int]:
    """Lines calling ``sqlite3.connect`` or ``aiosqlite.connect``."""
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "connect"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in ("sqlite3", "aiosqlite")
    ]


def test_the_finder_sees_a_connect() -> None:
    assert _connects(ast.parse("import sqlite3\nsqlite3.connect('x')\n")) == [2]


def test_only_the_factory_opens_sqlite() -> None:
    found = {
        str(path.relative_to(PACKAGE)): lines
        for path in PACKAGE.rglob("*.py")
        if path != FACTORY and (lines := _connects(ast.parse(path.read_text())))
    }
    assert found == {}
    assert _connects(ast.parse(FACTORY.read_text()))


def _pragma(connection: sqlite3.Connection, name: str) -> object:
    return connection.execute(f"PRAGMA {name}").fetchone()[0]


def test_a_writer_is_wal_with_foreign_keys_and_the_write_wait(tmp_path: Path) -> None:
    writer = open_writer(str(tmp_path / "db.sqlite3"), "FULL")
    try:
        assert writer.isolation_level is None  # BEGIN is the caller's
        assert _pragma(writer, "journal_mode") == "wal"
        assert _pragma(writer, "synchronous") == 2  # FULL
        assert _pragma(writer, "foreign_keys") == 1
        assert _pragma(writer, "busy_timeout") == int(WRITE_WAIT_S * 1000)
    finally:
        writer.close()


def test_writer_settings_refuse_an_unknown_synchronous(tmp_path: Path) -> None:
    connection = sqlite3.connect(tmp_path / "db.sqlite3")
    try:
        with pytest.raises(ValueError, match="synchronous"):
            apply_writer_settings(connection, "SOMETIMES")
    finally:
        connection.close()


@pytest.mark.parametrize("wait_s", [READ_ON_LOOP_WAIT_S, READ_OFF_LOOP_WAIT_S])
def test_a_reader_cannot_write_and_waits_as_told(tmp_path: Path, wait_s: float) -> None:
    path = str(tmp_path / "db.sqlite3")
    writer = open_writer(path, "NORMAL")
    writer.execute("CREATE TABLE t (x)")
    reader = open_reader(path, wait_s=wait_s)
    try:
        assert reader.isolation_level is None
        assert _pragma(reader, "busy_timeout") == int(wait_s * 1000)
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            reader.execute("INSERT INTO t VALUES (1)")
    finally:
        reader.close()
        writer.close()


def test_a_reader_for_any_thread_is_usable_from_another(tmp_path: Path) -> None:
    path = str(tmp_path / "db.sqlite3")
    writer = open_writer(path, "NORMAL")
    writer.execute("CREATE TABLE t (x)")
    writer.execute("INSERT INTO t VALUES (7)")
    shared = open_reader(path, wait_s=READ_ON_LOOP_WAIT_S, any_thread=True)
    own = open_reader(path, wait_s=READ_ON_LOOP_WAIT_S)
    seen: list[object] = []

    def read() -> None:
        seen.append(shared.execute("SELECT x FROM t").fetchone()[0])
        try:
            own.execute("SELECT x FROM t")
        except sqlite3.ProgrammingError as error:
            seen.append(type(error).__name__)

    thread = threading.Thread(target=read)
    thread.start()
    thread.join()
    shared.close()
    own.close()
    writer.close()
    assert seen == [7, "ProgrammingError"]

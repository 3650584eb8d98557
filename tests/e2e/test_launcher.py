"""The live tests' servers are forked by a launcher that has done the imports once
(tests/launcher.py). The same server started as a process of its own behaves the same:
both serve, report their exit, and leave no process behind."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from tests.conftest import LiveServer, LiveServers
from tests.live import stop_process


@pytest.mark.live
@pytest.mark.parametrize("launched", [True, False], ids=["launcher", "process"])
def test_a_server_serves_and_stops_either_way(
    launched: bool, tmp_path: Path, live_servers: LiveServers
) -> None:
    server = LiveServer(
        env={"TIDEGATE_DATA_DIR": str(tmp_path / "var"), "TIDEGATE_SECRET_KEY": "launcher"},
        cwd=tmp_path,
        launched=launched,
    )
    live_servers.add(server)
    server.start()
    assert server.process is not None
    assert server.process.poll() is None
    health = server.get("/healthz")
    assert health.status_code == 200
    # Its own working directory and environment: the SQLite file is where it was told.
    assert (tmp_path / "var" / "tidegate.sqlite3").exists()
    stop_process(server.process)
    # uvicorn shuts down on SIGTERM, then ends by the signal it was sent.
    assert server.process.returncode == -signal.SIGTERM
    assert "Application startup complete" in server.log.read_text()


@pytest.mark.live
def test_a_launched_server_that_cannot_start_reports_its_exit(tmp_path: Path) -> None:
    server = LiveServer(
        env={"TIDEGATE_DATA_DIR": str(tmp_path / "var"), "TIDEGATE_DATABASE_URL": "nope://"},
        cwd=tmp_path,
    )
    with pytest.raises(RuntimeError, match="server exited early"):
        server.start()
    assert server.process is not None
    assert server.process.returncode not in (None, 0)

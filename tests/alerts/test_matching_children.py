"""A stopped server leaves no process behind: the alert matcher's child process ends
with the server on SIGTERM (the lifespan shuts its pool down), and by itself when the
server is killed outright (SIGKILL: it asked the kernel for a signal when its parent
dies)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.alerts.test_live_alerts import _alert_env, _view
from tests.ingest.test_live_servers import _account
from tests.live import live_post

# Generous bounds for a loaded machine: only a process that never ends exceeds them.
WAIT_S = 60.0


def _children(pid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces, so split after its ')'.
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.add(int(entry.name))
    return found


def _running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _wait(condition: Callable[[], bool], *, timeout: float = WAIT_S) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


def _alert_view(base_url: str, who: dict[str, str], receiver_url: str) -> None:
    _view(
        base_url,
        who,
        {
            "name": "Matcher child",
            "query": "boom",
            "apps": [],
            "hosts": [],
            "levels": [],
            "tags": [],
            "category": [],
            "presetid": "",
            "channels": [
                {
                    "integration": "webhook",
                    "url": receiver_url,
                    "method": "POST",
                    "headers": {},
                    "bodyTemplate": {},
                    "immediate": "true",
                    "terminal": "false",
                    "operator": "presence",
                    "triggerlimit": 1,
                    "triggerinterval": "30",
                    "emails": [],
                    "key": "",
                    "timezone": "",
                }
            ],
        },
    )


@pytest.mark.parametrize(
    "stop_signal", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"]
)
def test_the_matcher_child_does_not_outlive_the_server(
    live_server_factory: Any, tmp_path: Path, stop_signal: signal.Signals
) -> None:
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'children.sqlite3'}"
    server = live_server_factory(env=_alert_env(database_url))
    assert server.process is not None
    server_pid = server.process.pid
    who = _account(server.base_url, database_url, tmp_path)
    _alert_view(server.base_url, who, "http://127.0.0.1:9/none")
    response = live_post(
        f"{server.base_url}/logs/ingest",
        params={"hostname": "h"},
        json={"lines": [{"line": "boom", "app": "a"}]},
        headers={"apikey": who["key"]},
    )
    assert response.status_code == 200, response.text
    # The evaluator starts the matching process on its first round with an alert.
    assert _wait(lambda: bool(_children(server_pid))), "no matcher child was started"
    children = _children(server_pid)

    os.kill(server_pid, stop_signal)
    server.process.wait(timeout=WAIT_S)
    ended = _wait(lambda: not any(_running(pid) for pid in children))
    left = {pid for pid in children if _running(pid)}
    for pid in left:  # do not leave them to the next test run
        os.kill(pid, signal.SIGKILL)
    assert ended, f"children of the stopped server still running: {left}"

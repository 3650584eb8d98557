"""The command line and real servers: `tidegate enterprise create`, `tidegate serve --workers N`."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from tests.live import live_get, live_post
from tests.waiting import until


def run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tidegate", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(params=["sqlite", "postgres"])
def server_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'cli.sqlite3'}"
    return str(request.getfixturevalue("fresh_pg_url"))


def test_enterprise_create_prints_exactly_one_json_object(server_db: str, tmp_path: Path) -> None:
    env = {"TIDEGATE_DATABASE_URL": server_db, "TIDEGATE_DATA_DIR": str(tmp_path / "var")}
    result = run_cli(
        "enterprise",
        "create",
        "--name",
        "Umbrella",
        "--partner",
        "p1",
        "--parent-enterprise-id",
        "abc",
        env=env,
    )
    assert result.returncode == 0, result.stderr
    body = json.loads(result.stdout)  # the whole of stdout is one JSON document
    assert set(body) == {"enterprise_id", "token"}
    assert re.fullmatch(r"ste_[0-9a-f]{40}", body["token"])
    assert result.stdout.count("\n") == 1


def test_enterprise_create_needs_a_name(tmp_path: Path) -> None:
    result = run_cli("enterprise", "create", env={"TIDEGATE_DATA_DIR": str(tmp_path)})
    assert result.returncode == 2
    assert result.stdout == ""


def test_first_start_bootstraps_a_key_file(live_server_factory: Any, tmp_path: Path) -> None:
    server = live_server_factory(
        env={"TIDEGATE_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'b.sqlite3'}"}
    )
    key_file = server.cwd / "var" / "enterprise-key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    token = key_file.read_text().strip()
    response = live_get(
        server.base_url + "/v3/enterprise", headers={"Authorization": f"Token {token}"}
    )
    assert response.status_code == 200
    assert response.json()["data"]["name"] == "default"


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat_line = (entry / "stat").read_text()
            except OSError:
                continue  # gone meanwhile
            # "pid (comm) state ppid ...": comm may hold spaces, so split after its ")".
            if int(stat_line.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_workers_are_forked_with_the_app_imported(
    live_server_factory: Any, tmp_path: Path, start: str
) -> None:
    """``serve --workers 2`` forks its workers from the supervisor, which imported the
    app once (a spawned worker is a fresh interpreter running multiprocessing's
    ``spawn_main``, importing everything again); ``TIDEGATE_WORKER_START=spawn`` keeps
    the old way."""
    server = live_server_factory(
        env={
            "TIDEGATE_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'w.sqlite3'}",
            "TIDEGATE_WORKER_START": start,
        },
        workers=2,
    )
    assert server.process is not None

    def workers() -> list[bytes] | None:
        lines = []
        for pid in _children(server.process.pid):
            try:
                lines.append(Path(f"/proc/{pid}/cmdline").read_bytes())
            except OSError:
                return None
        # multiprocessing's resource tracker (spawn only) is a child too, not a worker.
        found = [line for line in lines if b"resource_tracker" not in line]
        return found if len(found) == 2 else None

    found = until(workers, timeout=60, what="the server's two workers")
    spawned = [b"spawn_main" in line for line in found]
    assert spawned == [start == "spawn"] * 2, found
    assert live_get(server.base_url + "/healthz").status_code == 200


def test_serve_with_four_workers(live_server_factory: Any, server_db: str, tmp_path: Path) -> None:
    env = {
        "TIDEGATE_DATABASE_URL": server_db,
        "TIDEGATE_BOOTSTRAP": "0",
        "TIDEGATE_RATE_LIMIT_PER_MINUTE": "0",
    }
    server = live_server_factory(env=env, workers=4)
    created = json.loads(
        run_cli(
            "enterprise", "create", "--name", "w4", env={**env, "TIDEGATE_DATA_DIR": str(tmp_path)}
        ).stdout
    )
    headers = {"Authorization": f"Token {created['token']}"}

    def create(i: int) -> int:
        body = {"company": f"c{i}", "owneremail": f"o{i % 3}@example.com"}
        return live_post(
            server.base_url + "/v3/enterprise/account", json=body, headers=headers, timeout=30
        ).status_code

    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = list(pool.map(create, range(40)))
    assert statuses == [201] * 40
    accounts = live_get(server.base_url + "/v3/enterprise", headers=headers).json()["data"][
        "accounts"
    ]
    assert len(accounts) == 40
    assert len({a["account"] for a in accounts}) == 40

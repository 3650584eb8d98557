"""Helpers the benchmarks share: a free loopback port, a real ``tidegate serve`` process
waiting until it answers, /proc readings of a process (CPU time, VmHWM/VmRSS), an
enterprise token (CLI or database), an account with an ingestion key, a scratch
PostgreSQL database, and moto's S3 API in a process of its own.

The scripts run as ``python bench/bench_x.py``, so this directory is on ``sys.path`` and
they import it as ``from harness import ...``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, Any

import httpx

PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_up(url: str, timeout: float = 30.0, *, status: int | None = None) -> None:
    """Return once ``url`` answers (with ``status``, when given); raise after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            response = httpx.get(url, timeout=1)
        except httpx.HTTPError:
            time.sleep(0.1)
            continue
        if status is None or response.status_code == status:
            return
    raise RuntimeError(f"{url} did not come up")


def start_moto() -> tuple[subprocess.Popen[bytes], str]:
    """moto in server mode on a free port, answering: (its process, its endpoint).
    Terminate the process when done."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        wait_up(endpoint + "/moto-api/")
    except BaseException:
        process.terminate()
        raise
    return process, endpoint


class Server:
    """``tidegate serve`` on a free port (extra ``args`` after ``--port``), started with
    ``env``; ready once /healthz answers 200. ``prefix`` goes before the command (e.g.
    ``taskset -c 0``, which execs it, so the pid stays the server's)."""

    def __init__(
        self,
        env: dict[str, str],
        *args: str,
        cwd: Path | None = None,
        output: int | IO[bytes] | None = subprocess.DEVNULL,
        timeout: float = 60.0,
        prefix: Sequence[str] = (),
    ) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "tidegate", "serve", "--port", str(self.port), *args]
        self.process = subprocess.Popen(
            [*prefix, *command], env=env, cwd=cwd, stdout=output, stderr=output
        )
        try:
            wait_up(self.base + "/healthz", timeout, status=200)
        except RuntimeError:
            self.stop()
            raise RuntimeError("server did not start") from None

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def cpu_seconds(*pids: int) -> float:
    """utime + stime of the processes, in seconds (/proc/<pid>/stat)."""
    ticks = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def status_kb(pid: int, *names: str) -> dict[str, int]:
    """The named kB fields of /proc/<pid>/status (e.g. ``VmHWM``, ``VmRSS``)."""
    fields: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in names:
            fields[name] = int(value.split()[0])
    return fields


def cli_enterprise_token(env: dict[str, str], cwd: Path | None = None) -> str:
    """A new enterprise's token, made by ``tidegate enterprise create`` with ``env``."""
    created = json.loads(
        subprocess.run(
            [sys.executable, "-m", "tidegate", "enterprise", "create", "--name", "bench"],
            env=env, capture_output=True, check=True, text=True, cwd=cwd,
        ).stdout
    )  # fmt: skip
    return str(created["token"])


async def db_enterprise_token(url: str) -> str:
    """A new enterprise's token, written straight into the database at ``url``."""
    from tidegate.db.engine import Database
    from tidegate.enterprise.service import create_enterprise

    db = Database.connect(url)
    try:
        async with db.write_sessions() as session:
            _, token = await create_enterprise(
                session=session, name=f"bench-{uuid.uuid4().hex[:6]}"
            )
            await session.commit()
            return token
    finally:
        await db.dispose()


def new_account(base: str, enterprise: dict[str, str]) -> str:
    """A new account (random owner e-mail) of the enterprise whose headers are given."""
    response = httpx.post(
        f"{base}/v3/enterprise/account",
        json={"company": "bench", "owneremail": f"b-{uuid.uuid4().hex[:6]}@example.com"},
        headers=enterprise,
        timeout=30,
    )
    if response.status_code not in (200, 201):
        raise RuntimeError(f"account not created: {response.status_code} {response.text[:300]}")
    return str(response.json()["data"]["account_id"])


def ingestion_key(base: str, headers: dict[str, str]) -> str:
    """A new ingestion key of the account the headers act for."""
    response = httpx.post(
        f"{base}/v1/config/keys", params={"type": "ingestion"}, headers=headers, timeout=30
    )
    if response.status_code not in (200, 201):
        raise RuntimeError(f"key not created: {response.status_code} {response.text[:300]}")
    return str(response.json()["key"])


async def create_pg_database(name: str | None = None, *, template: str | None = None) -> str:
    """A new PostgreSQL database on 127.0.0.1 (named ``name``, or a random name), empty or
    a copy of the database ``template``; returns its name."""
    import asyncpg

    name = name or f"tidegate_bench_{uuid.uuid4().hex[:8]}"
    copy = f' TEMPLATE "{template}"' if template else ""
    conn = await asyncpg.connect(PG_ADMIN)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"{copy}')
    finally:
        await conn.close()
    return name


async def drop_pg_database(name: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(PG_ADMIN)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


def api_json(response: httpx.Response) -> Any:
    """The JSON of a successful API answer; raise on any other status."""
    if response.status_code not in (200, 201):
        raise RuntimeError(f"set-up failed: {response.status_code} {response.text[:300]}")
    return response.json()


def api_data(response: httpx.Response) -> Any:
    """The ``data`` of a successful /v3 answer; raise on any other status."""
    return api_json(response)["data"]


def gateway_pipeline(
    http: httpx.Client, headers: dict[str, str], title: str
) -> tuple[str, str, str, str]:
    """A new pipeline whose http source is fed by a new gateway route with an access key:
    ``(pipeline_id, route_id, route_key, source_id)``; the caller adds the rest."""
    pipeline = api_data(http.post("/v3/pipeline", json={"title": title}, headers=headers))["id"]
    route = api_data(
        http.post("/v3/pipeline/gateway-route", json={"title": title}, headers=headers)
    )["id"]
    key = api_data(
        http.post(f"/v3/pipeline/gateway-route/{route}/access-key", json={}, headers=headers)
    )["key"]
    source = api_data(
        http.post(
            f"/v3/pipeline/{pipeline}/source",
            json={"type": "http", "gateway_route_id": route},
            headers=headers,
        )
    )["id"]
    return pipeline, route, key, source


def publish(http: httpx.Client, headers: dict[str, str], pipeline: str) -> None:
    """Make the pipeline's draft the running revision (edits run only once published)."""
    api_data(
        http.post(
            f"/v3/pipeline/{pipeline}/publish",
            params={"allow_unconnected_edges": "true"},
            json={},
            headers=headers,
        )
    )


def wire(
    http: httpx.Client,
    headers: dict[str, str],
    title: str,
    processors: Sequence[tuple[str, dict[str, Any]]],
    sink: tuple[str, dict[str, Any]],
) -> tuple[str, str, str]:
    """A published pipeline fed by a new gateway route: ``source -> processors (in order)
    -> sink`` (``(type, user_config)`` each; a route's named outputs all feed the next
    node): ``(pipeline_id, route_id, route_key)``."""
    pipeline, route, key, source = gateway_pipeline(http, headers, title)
    inputs = [source]
    for type_, config in processors:
        node = api_data(
            http.post(
                f"/v3/pipeline/{pipeline}/transform",
                json={"type": type_, "user_config": config, "inputs": inputs},
                headers=headers,
            )
        )
        routed = type_ == "route"
        inputs = [output["id"] for output in node["outputs"]] if routed else [node["id"]]
    type_, config = sink
    api_data(
        http.post(
            f"/v3/pipeline/{pipeline}/sink",
            json={"type": type_, "user_config": config, "inputs": inputs},
            headers=headers,
        )
    )
    publish(http, headers, pipeline)
    return pipeline, route, key


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (/proc/<pid>/task/*/children)."""
    pids = [pid]
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            pids.extend(process_tree(int(child)))
    return pids


def server_env(database_url: str, work: Path) -> dict[str, str]:
    """The environment of a benchmark's server: its database, a data directory under
    ``work``, no bootstrap, no rate limit."""
    return {
        **os.environ,
        "TIDEGATE_DATABASE_URL": database_url,
        "TIDEGATE_DATA_DIR": str(work / "var"),
        "TIDEGATE_BOOTSTRAP": "0",
        "TIDEGATE_RATE_LIMIT_PER_MINUTE": "0",
        "TIDEGATE_SECRET_KEY": "bench",
    }


async def store_batches(database_url: str, account_id: str, batches: Iterable[list[Any]]) -> None:
    """Stores each batch of ``NewLine`` in a transaction of its own, as received now."""
    from tidegate.db.engine import Database
    from tidegate.logs.store import store_lines

    db = Database.connect(database_url)
    try:
        for batch in batches:
            async with db.write_sessions() as session:
                await store_lines(
                    session=session,
                    account_id=account_id,
                    lines=batch,
                    received_ms=int(time.time() * 1000),
                )
                await session.commit()
    finally:
        await db.dispose()


def pinned(cpu: int, command: list[str]) -> list[str]:
    """``command`` pinned to ``cpu`` when ``taskset`` is present (it execs the command)."""
    return ["taskset", "-c", str(cpu), *command] if shutil.which("taskset") else command


def wrk(url: str, headers: dict[str, str], seconds: int, pid: int) -> dict[str, float]:
    """``wrk -t1 -c32`` for ``seconds`` against ``url`` (pinned to CPU 1), with the server
    ``pid``'s CPU time over the run: req/s, p50 and p99 in ms, CPU ms per request."""
    command = ["wrk", "-t1", "-c32", f"-d{seconds}s", "--latency"]
    for name, value in headers.items():
        command += ["-H", f"{name}: {value}"]
    cpu_before = cpu_seconds(pid)
    out = subprocess.run(
        pinned(1, [*command, url]), capture_output=True, text=True, check=True
    ).stdout
    cpu = cpu_seconds(pid) - cpu_before
    if "Non-2xx" in out:
        raise RuntimeError("non-2xx answers during the run:\n" + out)

    def latency_ms(percentile: str) -> float:
        match = re.search(rf"^\s+{percentile}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
        assert match, out
        value, unit = float(match.group(1)), match.group(2)
        return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value

    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    served = re.search(r"(\d+) requests in", out)
    assert rps, out
    assert served, out
    return {
        "rps": float(rps.group(1)),
        "p50": latency_ms("50"),
        "p99": latency_ms("99"),
        "cpu_ms": cpu * 1000 / max(1, int(served.group(1))),
    }


def pinned_start(command: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    # taskset execs the command, so the pid is the server's own.
    return subprocess.Popen(pinned(0, command), env=env)


# A server of a side-by-side run starts pinned to one CPU, beside other work on a
# loaded machine: allow it longer than ``wait_up``'s default.
START_TIMEOUT_S = 120.0


class SideBySide:
    """The servers of a side-by-side run over one scratch database (an SQLite file, or a
    new PostgreSQL database), each pinned to CPU 0: ``tidegate serve`` from this checkout
    or another ``src`` and floors served by uvicorn (uvloop, httptools). The rate limiter
    stays on with a ceiling no run reaches, so its cost is measured. Use as a context
    manager: on exit the servers stop and the database goes."""

    def __init__(self, database: str) -> None:
        import asyncio
        import tempfile

        self.work = Path(tempfile.mkdtemp(prefix="tidegate-bench-"))
        self.pg_name: str | None = None
        if database == "sqlite":
            self.database_url = f"sqlite+aiosqlite:///{self.work / 'bench.sqlite3'}"
        else:
            self.pg_name = asyncio.run(create_pg_database())
            self.database_url = f"postgresql+asyncpg://postgres@127.0.0.1:5432/{self.pg_name}"
        self.env = {
            **os.environ,
            "TIDEGATE_DATABASE_URL": self.database_url,
            "TIDEGATE_DATA_DIR": str(self.work / "var"),
            "TIDEGATE_BOOTSTRAP": "0",
            "TIDEGATE_RATE_LIMIT_PER_MINUTE": str(10**9),
        }
        self.servers: dict[str, tuple[subprocess.Popen[bytes], str]] = {}

    def __enter__(self) -> SideBySide:
        return self

    def __exit__(self, *_exc: object) -> None:
        import asyncio

        for process, _port in self.servers.values():
            process.terminate()
            process.wait()
        shutil.rmtree(self.work, ignore_errors=True)
        if self.pg_name:
            asyncio.run(drop_pg_database(self.pg_name))

    def url(self, name: str, path: str) -> str:
        return f"http://127.0.0.1:{self.servers[name][1]}{path}"

    def pid(self, name: str) -> int:
        return self.servers[name][0].pid

    def tidegate(self, name: str, src: Path | None = None) -> str:
        """``tidegate serve`` (from ``src`` when given) as ``name``, once /healthz answers;
        returns its base URL."""
        env = {**self.env, "PYTHONPATH": str(src.resolve())} if src else self.env
        port = str(free_port())
        command = [sys.executable, "-m", "tidegate", "serve", "--log-level", "warning"]
        self.servers[name] = (pinned_start([*command, "--port", port], env), port)
        wait_up(self.url(name, "/healthz"), START_TIMEOUT_S)
        return self.url(name, "")

    def floor(self, name: str, app: str, **env: str) -> None:
        """``bench.bare_app:<app>`` under uvicorn as ``name`` (extra ``env``), once it
        answers."""
        port = str(free_port())
        command = [
            sys.executable, "-m", "uvicorn", "--loop", "uvloop", "--http", "httptools",
            "--no-access-log", "--log-level", "warning", "--port", port, f"bench.bare_app:{app}",
        ]  # fmt: skip
        root = str(Path(__file__).resolve().parent.parent)
        self.servers[name] = (pinned_start(command, {**self.env, "PYTHONPATH": root, **env}), port)
        wait_up(self.url(name, "/"), START_TIMEOUT_S)


CPU_HEADER = f"{'req/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'CPU ms/req':>10} {'x floor':>7}"


def cpu_row(result: dict[str, float], floor_cpu_ms: float) -> str:
    """A ``wrk`` result's columns under ``CPU_HEADER``, with its ratio to the floor's CPU."""
    return (
        f"{result['rps']:>8.0f} {result['p50']:>7.2f} {result['p99']:>7.2f} "
        f"{result['cpu_ms']:>10.3f} {result['cpu_ms'] / floor_cpu_ms:>7.2f}"
    )


def side_by_side_args(doc: str | None, *, seconds: int) -> argparse.ArgumentParser:
    """The arguments every side-by-side benchmark takes: ``--database``, ``--seconds``,
    ``--rounds`` and ``--compare-src``."""
    parser = argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--seconds", type=int, default=seconds)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--compare-src", type=Path, help="another checkout's src/ to run as a second tidegate"
    )
    return parser


def have_wrk() -> bool:
    if shutil.which("wrk"):
        return True
    print("bench: wrk is needed (apt-get install wrk)", file=sys.stderr)
    return False

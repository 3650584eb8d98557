"""Benchmark: GET /v3/enterprise/account/{id} with authentication, one worker, beside
floors on the same server (uvicorn, uvloop, httptools), in one run:

- ``fastapi+driver``: a FastAPI route doing the same credential lookup and account read
  with the raw driver (stdlib sqlite3, or asyncpg) and returning the same JSON
  (bench/bare_app.py; the bodies are checked equal before timing);
- ``bare ASGI``: the same bytes from a bare ASGI app;
- ``tidegate``: ``tidegate serve`` from this checkout (and, with ``--compare-src DIR``,
  another checkout's ``src`` as ``tidegate@DIR``, e.g. the code before a change).

    python bench/bench_account_read.py [--database sqlite|postgres] [--seconds 5]

Needs `wrk` (Debian package). Servers are pinned to CPU 0 and wrk to CPU 1 when
`taskset` is present. The rate limiter stays on, with a ceiling no run can reach, so
its cost is measured too. Prints requests/second, p50 and p99 latency, and the server
process's CPU time per request (utime + stime from /proc/<pid>/stat over the run,
divided by the requests wrk completed), and ratios against the FastAPI floor.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx

from harness import (
    cli_enterprise_token,
    cpu_seconds,
    create_pg_database,
    drop_pg_database,
    free_port,
    wait_up,
)

ROOT = Path(__file__).resolve().parent.parent


def pinned(cpu: int, command: list[str]) -> list[str]:
    return ["taskset", "-c", str(cpu), *command] if shutil.which("taskset") else command


def wrk(url: str, headers: dict[str, str], seconds: int, pid: int) -> dict[str, float]:
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


def start(command: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    # taskset execs the command, so the pid is the server's own.
    return subprocess.Popen(pinned(0, command), env=env)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--compare-src", type=Path, help="another checkout's src/ to run as a second tidegate"
    )
    args = parser.parse_args()
    if not shutil.which("wrk"):
        print("bench: wrk is needed (apt-get install wrk)", file=sys.stderr)
        return 2

    work = Path(tempfile.mkdtemp(prefix="tidegate-bench-"))
    pg_name = None
    if args.database == "sqlite":
        database_url = f"sqlite+aiosqlite:///{work / 'bench.sqlite3'}"
    else:
        pg_name = asyncio.run(create_pg_database())
        database_url = f"postgresql+asyncpg://postgres@127.0.0.1:5432/{pg_name}"

    env = {
        **os.environ,
        "TIDEGATE_DATABASE_URL": database_url,
        "TIDEGATE_DATA_DIR": str(work / "var"),
        "TIDEGATE_BOOTSTRAP": "0",
        "TIDEGATE_RATE_LIMIT_PER_MINUTE": str(10**9),
    }
    headers = {"Authorization": f"Token {cli_enterprise_token(env)}"}
    serve = ["-m", "tidegate", "serve", "--log-level", "warning", "--port"]
    uvicorn = [
        "-m", "uvicorn", "--loop", "uvloop", "--http", "httptools", "--no-access-log",
        "--log-level", "warning", "--port",
    ]  # fmt: skip
    servers: dict[str, tuple[subprocess.Popen[bytes], str]] = {}
    results: dict[str, list[dict[str, float]]] = {}
    try:
        port = free_port()
        servers["tidegate"] = (start([sys.executable, *serve, str(port)], env), str(port))
        base = f"http://127.0.0.1:{port}"
        wait_up(base + "/healthz")
        account = httpx.post(
            base + "/v3/enterprise/account",
            json={"company": "Bench", "owneremail": "bench@example.com"},
            headers=headers,
        ).json()["data"]
        path = f"/v3/enterprise/account/{account['account_id']}"
        body = httpx.get(base + path, headers=headers).content
        (work / "body.json").write_bytes(body)
        floor_env = {**env, "BENCH_BODY_FILE": str(work / "body.json"), "PYTHONPATH": str(ROOT)}
        for name, app in (("fastapi+driver", "fastapi_floor"), ("bare ASGI", "asgi_floor")):
            port = free_port()
            command = [sys.executable, *uvicorn, str(port), f"bench.bare_app:{app}"]
            servers[name] = (start(command, floor_env), str(port))
        if args.compare_src:
            port = free_port()
            other_env = {**env, "PYTHONPATH": str(args.compare_src.resolve())}
            name = f"tidegate@{args.compare_src}"
            servers[name] = (start([sys.executable, *serve, str(port)], other_env), str(port))
        for name, (_process, port) in servers.items():
            url = f"http://127.0.0.1:{port}{path}"
            wait_up(f"http://127.0.0.1:{port}/")
            answer = httpx.get(url, headers=headers).content
            if json.loads(answer) != json.loads(body):
                raise RuntimeError(f"{name} answers differently:\n{answer!r}\n{body!r}")
            wrk(url, headers, 1, _process.pid)  # warm-up
            results[name] = []
        for _ in range(args.rounds):
            for name, (process, port) in servers.items():
                url = f"http://127.0.0.1:{port}{path}"
                results[name].append(wrk(url, headers, args.seconds, process.pid))
    finally:
        for process, _port in servers.values():
            process.terminate()
            process.wait()
        shutil.rmtree(work, ignore_errors=True)
        if pg_name:
            asyncio.run(drop_pg_database(pg_name))

    # Best round by CPU per request: the least disturbed by other load on the machine.
    best = {name: min(runs, key=lambda r: r["cpu_ms"]) for name, runs in results.items()}
    print(
        f"GET /v3/enterprise/account/{{id}}, authenticated, 1 worker, {args.database}, "
        f"wrk -t1 -c32 -d{args.seconds}s, best of {args.rounds} (by CPU per request)"
    )
    floor = best["fastapi+driver"]
    print(
        f"{'target':<28} {'req/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'CPU ms/req':>10} {'x floor':>7}"
    )
    for name, r in best.items():
        print(
            f"{name:<28} {r['rps']:>8.0f} {r['p50']:>7.2f} {r['p99']:>7.2f} "
            f"{r['cpu_ms']:>10.3f} {r['cpu_ms'] / floor['cpu_ms']:>7.2f}"
        )
    print("x floor: CPU per request over the FastAPI+driver floor's (aim <= 2.0)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

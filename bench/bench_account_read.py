"""Benchmark: GET /v3/enterprise/account/{id} with authentication, one worker, against a
bare ASGI app returning the same JSON on the same server, in one run.

    python bench/bench_account_read.py [--database sqlite|postgres] [--seconds 10]

Needs `wrk` (Debian package). The server is pinned to CPU 0 and wrk to CPU 1 when
`taskset` is present. The rate limiter stays on, with a ceiling no run can reach, so
its cost is measured too. Prints requests/second, p50 and p99 latency, and ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import asyncpg
import httpx

ROOT = Path(__file__).resolve().parent.parent
PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def pinned(cpu: int, command: list[str]) -> list[str]:
    return ["taskset", "-c", str(cpu), *command] if shutil.which("taskset") else command


def wait_up(url: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not come up")


def wrk(url: str, headers: dict[str, str], seconds: int) -> dict[str, float]:
    command = ["wrk", "-t1", "-c32", f"-d{seconds}s", "--latency"]
    for name, value in headers.items():
        command += ["-H", f"{name}: {value}"]
    out = subprocess.run(
        pinned(1, [*command, url]), capture_output=True, text=True, check=True
    ).stdout
    if "Non-2xx" in out:
        raise RuntimeError("non-2xx answers during the run:\n" + out)

    def latency_ms(percentile: str) -> float:
        match = re.search(rf"^\s+{percentile}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
        assert match, out
        value, unit = float(match.group(1)), match.group(2)
        return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value

    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    assert rps, out
    return {"rps": float(rps.group(1)), "p50": latency_ms("50"), "p99": latency_ms("99")}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    if not shutil.which("wrk"):
        print("bench: wrk is needed (apt-get install wrk)", file=sys.stderr)
        return 2

    work = Path(tempfile.mkdtemp(prefix="tidegate-bench-"))
    pg_name = None
    if args.database == "sqlite":
        database_url = f"sqlite+aiosqlite:///{work / 'bench.sqlite3'}"
    else:
        pg_name = f"tidegate_bench_{uuid.uuid4().hex[:8]}"

        async def create() -> None:
            conn = await asyncpg.connect(PG_ADMIN)
            await conn.execute(f'CREATE DATABASE "{pg_name}"')
            await conn.close()

        asyncio.run(create())
        database_url = f"postgresql+asyncpg://postgres@127.0.0.1:5432/{pg_name}"

    env = {
        **os.environ,
        "TIDEGATE_DATABASE_URL": database_url,
        "TIDEGATE_DATA_DIR": str(work / "var"),
        "TIDEGATE_BOOTSTRAP": "0",
        "TIDEGATE_RATE_LIMIT_PER_MINUTE": str(10**9),
    }
    created = json.loads(
        subprocess.run(
            [sys.executable, "-m", "tidegate", "enterprise", "create", "--name", "bench"],
            env=env, capture_output=True, check=True, text=True,
        ).stdout
    )  # fmt: skip
    headers = {"Authorization": f"Token {created['token']}"}
    port = free_port()
    server = subprocess.Popen(
        pinned(
            0,
            [
                sys.executable,
                "-m",
                "tidegate",
                "serve",
                "--port",
                str(port),
                "--log-level",
                "warning",
            ],
        ),
        env=env,
    )
    bare = None
    try:
        base = f"http://127.0.0.1:{port}"
        wait_up(base + "/healthz")
        account = httpx.post(
            base + "/v3/enterprise/account",
            json={"company": "Bench", "owneremail": "bench@example.com"},
            headers=headers,
        ).json()["data"]
        url = f"{base}/v3/enterprise/account/{account['account_id']}"
        body = httpx.get(url, headers=headers).content
        (work / "body.json").write_bytes(body)

        bare_port = free_port()
        bare = subprocess.Popen(
            pinned(0, [
                sys.executable, "-m", "uvicorn", "bench.bare_app:app", "--port", str(bare_port),
                "--loop", "uvloop", "--http", "httptools", "--no-access-log", "--log-level", "warning",
            ]),
            env={**env, "BENCH_BODY_FILE": str(work / "body.json"), "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
        bare_url = f"http://127.0.0.1:{bare_port}/v3/enterprise/account/{account['account_id']}"
        wait_up(bare_url)
        assert httpx.get(bare_url).content == body

        results: dict[str, list[dict[str, float]]] = {"bare ASGI": [], "tidegate": []}
        wrk(url, headers, 2)  # warm-up
        wrk(bare_url, headers, 2)
        for _ in range(args.rounds):
            results["bare ASGI"].append(wrk(bare_url, headers, args.seconds))
            results["tidegate"].append(wrk(url, headers, args.seconds))
    finally:
        server.terminate()
        server.wait()
        if bare is not None:
            bare.terminate()
            bare.wait()
        shutil.rmtree(work, ignore_errors=True)
        if pg_name:

            async def drop() -> None:
                conn = await asyncpg.connect(PG_ADMIN)
                await conn.execute(f'DROP DATABASE IF EXISTS "{pg_name}" WITH (FORCE)')
                await conn.close()

            asyncio.run(drop())

    best = {name: max(runs, key=lambda r: r["rps"]) for name, runs in results.items()}
    print(f"GET /v3/enterprise/account/{{id}}, authenticated, 1 worker, {args.database}, "
          f"wrk -t1 -c32 -d{args.seconds}s, best of {args.rounds}")  # fmt: skip
    print(f"{'target':<12} {'req/s':>10} {'p50 ms':>8} {'p99 ms':>8}")
    for name, r in best.items():
        print(f"{name:<12} {r['rps']:>10.0f} {r['p50']:>8.2f} {r['p99']:>8.2f}")
    ratio = best["tidegate"]["rps"] / best["bare ASGI"]["rps"]
    print(f"ratio tidegate/bare throughput: {ratio:.2f} (aim >= 0.50)")
    print(
        f"ratio p50 latency tidegate/bare: {best['tidegate']['p50'] / best['bare ASGI']['p50']:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

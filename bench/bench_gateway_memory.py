"""Benchmark: peak memory (RSS high-water mark) of a real one-worker server answering one
gateway request, for attack bodies and for a full legitimate batch.

    python bench/bench_gateway_memory.py [--baseline REV]

Each case runs in a fresh ``tidegate serve`` (SQLite, one worker), so the peak
(``VmHWM`` of /proc) belongs to that one request; it is printed against the server's
resident size after start-up and a warm-up request. The pipeline of the route is
``source -> log_analysis`` (the destination that converts every event to a line).
Cases:

* ``1M {} array``: a 3 MB JSON array of a million empty objects (issue 7: 2.43 GB);
* ``3.4M {} array``: the same attack at the 10 MB body limit;
* ``1M {} ndjson``: a million empty objects as NDJSON;
* ``50k events``: a legitimate batch at the events cap (about 7 MB), stored.

With ``--baseline REV`` the same cases also run against the source tree of that git
revision (extracted with ``git archive``) in the same run, side by side. Also prints
the status, the wall time of the request and the CPU seconds the server spent.
Numbers from a shared, loaded machine are rough: compare the columns, not the digits.
The baseline of the 10 MB case takes minutes (``--only`` picks cases; a request still
running after 600 s is reported as ``t/o`` with the peak reached so far).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path
from typing import Any

import httpx

from harness import (
    Server,
    api_data,
    cli_enterprise_token,
    cpu_seconds,
    gateway_pipeline,
    new_account,
    publish,
    status_kb,
)

ROOT = Path(__file__).resolve().parent.parent


def setup(base: str, token: str) -> tuple[str, str]:
    enterprise = {"Authorization": f"Token {token}"}
    with httpx.Client(base_url=base, timeout=30) as http:
        account = new_account(base, enterprise)
        headers = {**enterprise, "x-delegate-account-id": account}
        pipeline, route, key, source = gateway_pipeline(http, headers, "mem")
        api_data(
            http.post(
                f"/v3/pipeline/{pipeline}/destination",
                json={"type": "log_analysis", "inputs": [source]},
                headers=headers,
            )
        )
        publish(http, headers, pipeline)
    return route, key


def one_case(src: Path, body: bytes, content_type: str) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="tidegate-bench-mem-"))
    env = {
        **os.environ,
        "PYTHONPATH": str(src),
        "TIDEGATE_DATABASE_URL": f"sqlite+aiosqlite:///{work / 'bench.sqlite3'}",
        "TIDEGATE_DATA_DIR": str(work / "var"),
        "TIDEGATE_BOOTSTRAP": "0",
        "TIDEGATE_RATE_LIMIT_PER_MINUTE": "0",
    }
    env.pop("TIDEGATE_REDIS_URL", None)
    token = cli_enterprise_token(env, cwd=work)
    server = Server(
        env, "--workers", "1", "--log-level", "error", cwd=work, output=None, timeout=30
    )
    base = server.base
    try:
        route, key = setup(base, token)
        auth = {"Authorization": f"Token {key}", "Content-Type": content_type}
        with httpx.Client(base_url=base, timeout=600) as http:
            warm = http.post(
                f"/gateway/{route}",
                content=b'{"line": "warm"}',
                headers={**auth, "Content-Type": "application/json"},
            )
            assert warm.status_code == 200, warm.text
            before_kb = status_kb(server.pid, "VmHWM")["VmHWM"]
            cpu_before = cpu_seconds(server.pid)
            started = time.monotonic()
            try:
                status: Any = http.post(f"/gateway/{route}", content=body, headers=auth).status_code
            except httpx.TimeoutException:
                status = "t/o"  # the peak so far is still reported
            wall = time.monotonic() - started
        return {
            "status": status,
            "base_mb": before_kb / 1024,
            "peak_mb": status_kb(server.pid, "VmHWM")["VmHWM"] / 1024,
            "wall_s": wall,
            "cpu_s": cpu_seconds(server.pid) - cpu_before,
        }
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


def extract(rev: str) -> Path:
    target = Path(tempfile.mkdtemp(prefix="tidegate-baseline-"))
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "src"], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(target, filter="data")
    return target / "src"


def cases() -> list[tuple[str, bytes, str]]:
    event = {"line": "GET /api/v1/items/12345 200 12ms", "host": "web-1", "app": "api"}
    return [
        ("1M {} array (3 MB)", b"[" + b",".join([b"{}"] * 1_000_000) + b"]", "application/json"),
        ("3.4M {} array (10 MB)", b"[" + b",".join([b"{}"] * 3_400_000) + b"]", "application/json"),
        ("1M {} ndjson (3 MB)", b"\n".join([b"{}"] * 1_000_000), "application/x-ndjson"),
        (
            "50k events (stored)",
            json.dumps([{**event, "n": n} for n in range(50_000)]).encode(),
            "application/json",
        ),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--baseline", help="git revision to compare with (e.g. main)")
    parser.add_argument("--only", default="", help="run the cases whose name contains this")
    args = parser.parse_args()
    trees = [("current", ROOT / "src")]
    if args.baseline:
        trees.insert(0, (f"baseline {args.baseline}", extract(args.baseline)))
    print(f"{'case':<24} {'tree':<20} {'status':>6} {'base MB':>8} {'peak MB':>8} "
          f"{'+MB':>7} {'wall s':>7} {'cpu s':>6}")  # fmt: skip
    for name, body, content_type in cases():
        if args.only not in name:
            continue
        for label, src in trees:
            result = one_case(src, body, content_type)
            print(
                f"{name:<24} {label:<20} {result['status']:>6} {result['base_mb']:>8.0f} "
                f"{result['peak_mb']:>8.0f} {result['peak_mb'] - result['base_mb']:>7.0f} "
                f"{result['wall_s']:>7.2f} {result['cpu_s']:>6.2f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: ingestion with 0 and with 50 active alerts, in the same run and on the
same server, and what evaluating the alerts costs.

    python bench/bench_alerts.py [--seconds 10] [--databases sqlite,postgres] [--workers 1]

For each backend one real `tidegate serve` (alert tick 1 s): `wrk` (2 threads, 16
connections) posts 100-line batches (bench_ingest's realistic lines) first with no
alert anywhere in the store (the floor), then after 50 views with alert channels were
created on the posting account (queries of the search syntax, a third of them
matching a share of the lines; limits out of reach, so nothing is delivered and only
evaluation is measured). Reported per cell: ingested lines/s and the ratio to the
0-alert floor; the server's CPU (all processes, user + system) per 1,000 lines while
wrk ran, and of the server's own processes alone (without the alert matching
process, which runs beside them); how long after wrk stopped the evaluator's cursor reached the last stored
line (its lag), and the server's CPU per 1,000 lines counted until then (ingestion
plus evaluation of every line).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_ingest import children, run_wrk
from harness import (
    Server,
    cpu_seconds,
    create_pg_database,
    db_enterprise_token,
    drop_pg_database,
    ingestion_key,
    new_account,
)
from tidegate.db.migrate import upgrade_database

ALERTS = 50
QUERIES = [
    "status=500",  # about a third of the lines
    "app:web level:info",
    "took 9*",
    'user.id:<100 "GET /api"',
    "-status=200 path:/api/1*",
    "level:[error,warn] took",
    "meta.status:>=400",
    "items/4* OR items/7*",
    "heartbeat",
    "app:auth -level:debug",
]


def views(count: int) -> list[dict[str, object]]:
    return [
        {
            "name": f"alert {n}",
            "query": QUERIES[n % len(QUERIES)],
            "channels": [
                {
                    "integration": "webhook",
                    "url": "https://8.8.8.8/never",
                    "operator": "presence",
                    "triggerlimit": 100_000,
                    "triggerinterval": "24h",
                    "immediate": "true",
                }
            ],
        }
        for n in range(count)
    ]


def cursor_position(url: str) -> tuple[int, int]:
    """(the evaluator's cursor, the largest stored line id)."""
    if url.startswith("sqlite"):
        path = url.split(":///", 1)[1]
        with sqlite3.connect(path) as connection:
            cursor = connection.execute(
                "SELECT last_line_id FROM alert_cursors WHERE name = 'lines'"
            ).fetchone()
            top = connection.execute("SELECT max(id) FROM log_lines").fetchone()
        return (cursor[0] if cursor else 0), (top[0] or 0)

    async def fetch() -> tuple[int, int]:
        import asyncpg

        connection = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql"))
        try:
            cursor = await connection.fetchval(
                "SELECT last_line_id FROM alert_cursors WHERE name = 'lines'"
            )
            top = await connection.fetchval("SELECT max(id) FROM log_lines")
            return int(cursor or 0), int(top or 0)
        finally:
            await connection.close()

    return asyncio.run(fetch())


@dataclass
class Cell:
    lines_per_s: float
    cpu_ms: float
    serving_cpu_ms: float
    lag_s: float
    cpu_ms_with_evaluation: float
    failed: int


def is_matcher(pid: int) -> bool:
    """The alert matching process (a multiprocessing child of a worker)."""
    return b"multiprocessing" in Path(f"/proc/{pid}/cmdline").read_bytes()


def descendants(pid: int) -> list[int]:
    found = []
    for child in children(pid):
        found += [child, *descendants(child)]
    return found


def measure(server: Server, url: str, key: str, seconds: int, workdir: Path) -> Cell:
    run_wrk(server.base, key, 1, workdir)  # warm the workers (and start the matcher)
    wait_caught_up(url, timeout=120)
    # The server, its workers and the alert matching process each worker may start.
    pids = [server.pid, *descendants(server.pid)]
    serving = [pid for pid in pids if not is_matcher(pid)]
    cpu, serving_cpu = cpu_seconds(*pids), cpu_seconds(*serving)
    lines, failed = run_wrk(server.base, key, seconds, workdir)
    ingest_cpu = cpu_seconds(*pids) - cpu
    serving_used = cpu_seconds(*serving) - serving_cpu
    stopped = time.perf_counter()
    lag = wait_caught_up(url, timeout=600) - stopped
    total_cpu = cpu_seconds(*pids) - cpu
    return Cell(
        lines_per_s=lines / seconds,
        cpu_ms=ingest_cpu / lines * 1e6,
        serving_cpu_ms=serving_used / lines * 1e6,
        lag_s=max(0.0, lag),
        cpu_ms_with_evaluation=total_cpu / lines * 1e6,
        failed=failed,
    )


def wait_caught_up(url: str, *, timeout: float) -> float:
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        cursor, top = cursor_position(url)
        if cursor >= top:
            return time.perf_counter()
        time.sleep(0.2)
    raise RuntimeError("the evaluator did not catch up")


def bench_backend(backend: str, seconds: int, workers: int, workdir: Path) -> list[str]:
    pg_name = None
    if backend == "sqlite":
        url = f"sqlite+aiosqlite:///{workdir / 'alerts.sqlite3'}"
    else:
        pg_name = asyncio.run(create_pg_database())
        url = f"postgresql+asyncpg://postgres@127.0.0.1:5432/{pg_name}"
    env = {
        **os.environ,
        "TIDEGATE_DATABASE_URL": url,
        "TIDEGATE_DATA_DIR": str(workdir / f"var-{backend}"),
        "TIDEGATE_SECRET_KEY": "bench",
        "TIDEGATE_BOOTSTRAP": "0",
        "TIDEGATE_RATE_LIMIT_PER_MINUTE": "0",
        "TIDEGATE_ALERT_TICK_S": "1",
    }
    rows = []
    try:
        asyncio.run(upgrade_database(url))
        token = asyncio.run(db_enterprise_token(url))
        server = Server(env, "--workers", str(workers))
        try:
            enterprise = {"Authorization": f"Token {token}"}
            account = new_account(server.base, enterprise)
            headers = {**enterprise, "x-delegate-account-id": account}
            key = ingestion_key(server.base, headers)
            floor = measure(server, url, key, seconds, workdir)
            for body in views(ALERTS):
                created = httpx.post(f"{server.base}/v1/config/view", json=body, headers=headers)
                assert created.status_code == 200, created.text
            time.sleep(3)  # the evaluator has loaded the views
            loaded = measure(server, url, key, seconds, workdir)
        finally:
            server.stop()
        for count, cell in ((0, floor), (ALERTS, loaded)):
            rows.append(
                f"| {backend:<8} | {workers:>7} | {count:>6} | {cell.lines_per_s:>9,.0f} | "
                f"{cell.lines_per_s / floor.lines_per_s:>5.2f} | {cell.cpu_ms:>10.1f} | "
                f"{cell.serving_cpu_ms:>10.1f} | "
                f"{cell.lag_s:>6.1f} | {cell.cpu_ms_with_evaluation:>12.1f} | {cell.failed:>6} |"
            )
    finally:
        if pg_name:
            asyncio.run(drop_pg_database(pg_name))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--databases", default="sqlite,postgres")
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    print(
        "| backend  | workers | alerts |   lines/s | ratio | CPU ms/1k  | server ms/1k | lag s  |"
        " +eval ms/1k  | non-2xx |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for backend in args.databases.split(","):
            for line in bench_backend(backend, args.seconds, args.workers, Path(tmp)):
                print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

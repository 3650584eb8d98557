"""Benchmark: /healthz latency while exports of big lines run, one worker, SQLite.

    python bench/bench_export_loop.py [--compare-src /path/to/old/src] [--exports 4]

Stores 40 lines of 1 MB, each with a `meta` of 20,000 keys, then runs `--exports`
concurrent `GET /v2/export?query=nothing-matches` (each page decodes and searches all 40
lines) while probing `/healthz` every 50 ms. Prints the health latency (p50, p99, max),
the exports' wall time and the server's CPU seconds per export page. With
`--compare-src`, a second server runs that source tree (e.g. the code before issue 7,
where pages ran on the event loop) on the same database, in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

from harness import Server, cli_enterprise_token, cpu_seconds, new_account

ROOT = Path(__file__).resolve().parent.parent
BASE_MS = 1_763_800_000_000


async def seed(database_url: str, account_id: str) -> None:
    from sqlalchemy import text

    from tidegate.db.engine import Database
    from tidegate.logs.store import NewLine, store_lines

    meta = {f"k{n}": {"v": n, "s": "x" * 8} for n in range(20_000)}
    db = Database.connect(database_url)
    try:
        async with db.write_sessions() as session:
            lines = [
                NewLine(line="y" * 1_000_000, ts=BASE_MS + i, host="h", meta=meta) for i in range(5)
            ]
            await store_lines(
                session=session,
                account_id=account_id,
                lines=lines,
                received_ms=int(time.time() * 1000),
            )
            await session.commit()
        for _ in range(3):
            async with db.write_sessions() as session:
                await session.execute(
                    text(
                        "INSERT INTO log_lines (account_id, ts, received_ms, host, meta, line, size_bytes) "
                        "SELECT account_id, ts + 1000, received_ms, host, meta, line, size_bytes "
                        "FROM log_lines WHERE account_id = :a"
                    ),
                    {"a": account_id},
                )
                await session.commit()
    finally:
        await db.dispose()


async def measure(base: str, headers: dict[str, str], exports: int, pid: int) -> dict[str, float]:
    params = {
        "from": BASE_MS // 1000 - 60,
        "to": BASE_MS // 1000 + 3600,
        "query": "nothing-matches",
    }
    latencies: list[float] = []
    async with httpx.AsyncClient(base_url=base, timeout=300) as http:
        cpu0, started = cpu_seconds(pid), time.monotonic()
        tasks = [
            asyncio.create_task(http.get("/v2/export", params=params, headers=headers))
            for _ in range(exports)
        ]
        while not all(task.done() for task in tasks):
            sent = time.monotonic()
            await http.get("/healthz")
            latencies.append((time.monotonic() - sent) * 1000)
            await asyncio.sleep(0.05)
        for task in tasks:
            assert task.result().status_code == 200, task.result().text
        wall, cpu = time.monotonic() - started, cpu_seconds(pid) - cpu0
    latencies.sort()
    return {
        "health p50 ms": statistics.median(latencies),
        "health p99 ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
        "health max ms": latencies[-1],
        "exports wall s": wall,
        "CPU s per page": cpu / exports,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--compare-src", type=Path, default=None)
    parser.add_argument("--exports", type=int, default=4)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tidegate-bench-"))
    database_url = f"sqlite+aiosqlite:///{work / 'bench.sqlite3'}"
    env = {
        **os.environ,
        "TIDEGATE_DATABASE_URL": database_url,
        "TIDEGATE_DATA_DIR": str(work / "var"),
        "TIDEGATE_BOOTSTRAP": "0",
        "TIDEGATE_RATE_LIMIT_PER_MINUTE": "0",
        "TIDEGATE_SECRET_KEY": "bench",
    }
    token = cli_enterprise_token(env)
    trees = {"this tree": str(ROOT / "src")}
    if args.compare_src is not None:
        trees["compare"] = str(args.compare_src.resolve())
    results: dict[str, dict[str, float]] = {}
    account_id = None
    try:
        for name, src in trees.items():
            server = Server({**env, "PYTHONPATH": src}, "--log-level", "warning", output=None)
            try:
                base = server.base
                enterprise = {"Authorization": f"Token {token}"}
                if account_id is None:
                    account_id = new_account(base, enterprise)
                    asyncio.run(seed(database_url, account_id))
                headers = {**enterprise, "x-delegate-account-id": account_id}
                results[name] = asyncio.run(measure(base, headers, args.exports, server.pid))
            finally:
                server.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{args.exports} concurrent export pages of 40 lines (1 MB + 20,000-key meta each)")
    for name, row in results.items():
        print(f"{name:>10}: " + ", ".join(f"{key} {value:.1f}" for key, value in row.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

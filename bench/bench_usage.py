"""Benchmark: usage and export v1 on a tenant with very many distinct hosts, one worker,
SQLite; /healthz latency while they run, beside the idle latency (the floor).

    python bench/bench_usage.py [--lines 200000] [--hosts 200000]

Stores `--lines` lines spread over `--hosts` distinct hosts (the tenant that invents a
host per line), 50 apps and 1,000 tags, then times, one at a time, each usage read and a
20,000-line /v1/export while probing /healthz every 20 ms. Per-host usage is computed
from the store (nothing is recorded per host), so the cost is one aggregation per
request, in an export worker thread: the loop must stay free.
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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from harness import Server, cli_enterprise_token, new_account, store_batches

BASE_MS = 1_763_800_000_000
BATCH = 20_000


def batches(lines: int, hosts: int) -> Iterator[list[Any]]:
    from tidegate.logs.store import NewLine

    for start in range(0, lines, BATCH):
        yield [
            NewLine(
                line=f"request {i} served in {i % 977} ms",
                ts=BASE_MS + i,
                host=f"host-{i % hosts}",
                app=f"app-{i % 50}",
                tags=[f"t{i % 1000}", "all"],
            )
            for i in range(start, min(lines, start + BATCH))
        ]


async def probe(http: httpx.AsyncClient, done: asyncio.Event) -> list[float]:
    latencies: list[float] = []
    while not done.is_set():
        sent = time.monotonic()
        await http.get("/healthz")
        latencies.append((time.monotonic() - sent) * 1000)
        await asyncio.sleep(0.02)
    return latencies


def summary(latencies: list[float]) -> str:
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    return f"health p50 {statistics.median(latencies):.1f} p99 {p99:.1f} max {latencies[-1]:.1f} ms"


async def measure(base: str, headers: dict[str, str]) -> list[str]:
    window = {"from": BASE_MS - 1, "to": BASE_MS + 10**9}
    day = time.strftime("%Y-%m-%d", time.gmtime(BASE_MS / 1000))
    requests = [
        ("/v1/usage/hosts (top 50)", "/v1/usage/hosts", window),
        ("/v1/usage/hosts/host-7", "/v1/usage/hosts/host-7", window),
        ("/v1/usage/tags (top 50)", "/v1/usage/tags", window),
        ("/v2/usage/hosts limit 1000", "/v2/usage/hosts", {"from": day, "to": day, "limit": 1000}),
        ("/v2/usage (usage table)", "/v2/usage", {}),
        ("/v2/export 10,000 (compare)", "/v2/export", window),
        ("/v1/export 20,000 lines", "/v1/export", {**window, "json": "true"}),
        ("/v1/export 20,000 NDJSON", "/v1/export", window),
        ("/v1/usage/hosts again", "/v1/usage/hosts", window),
    ]
    rows = []
    async with httpx.AsyncClient(base_url=base, timeout=600) as http:
        done = asyncio.Event()
        idle = asyncio.create_task(probe(http, done))
        await asyncio.sleep(2)
        done.set()
        rows.append(f"{'idle (floor)':>28}: {summary(await idle)}")
        for label, path, params in requests:
            done = asyncio.Event()
            task = asyncio.create_task(probe(http, done))
            started = time.monotonic()
            response = await http.get(path, params=params, headers=headers)
            wall = time.monotonic() - started
            done.set()
            assert response.status_code == 200, response.text
            rows.append(
                f"{label:>28}: {wall * 1000:.0f} ms, {len(response.content):,} bytes; "
                + summary(await task)
            )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--hosts", type=int, default=200_000)
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
    try:
        server = Server(env, "--log-level", "warning", output=None)
        try:
            enterprise = {"Authorization": f"Token {token}"}
            account_id = new_account(server.base, enterprise)
            seeded = time.monotonic()
            asyncio.run(store_batches(database_url, account_id, batches(args.lines, args.hosts)))
            print(
                f"seeded {args.lines:,} lines, {args.hosts:,} hosts in {time.monotonic() - seeded:.0f} s"
            )
            headers = {**enterprise, "x-delegate-account-id": account_id}
            for row in asyncio.run(measure(server.base, headers)):
                print(row)
        finally:
            server.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: lines/second through POST /logs/ingest (batches of 100 lines) with 0, 10
and 100 active exclusion rules (hosts, apps and query rules; none matches, so every rule
is evaluated for every line and every line is stored), one worker and four, on SQLite
and PostgreSQL.

    python bench/bench_ingest.py [--seconds 5] [--databases sqlite,postgres]

Needs `wrk` (Debian package), 16 connections. Ratios are against the 0-rule case of the
same row and against a floor: the same batches written by ``store_lines`` directly
(same engine and driver, one transaction per 100-line batch, 8 concurrent writers in
one process, no HTTP, no parsing), i.e. what the store alone sustains. It also prints
the cost of SQLite's synchronous=FULL against NORMAL and the CPU cost of judging one
batch against the rules in process. Takes about two and a half minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import tempfile
import time
import timeit
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import text

from harness import (
    Server,
    create_pg_database,
    db_enterprise_token,
    drop_pg_database,
    ingestion_key,
    new_account,
)
from tidegate.db.engine import Database
from tidegate.db.migrate import upgrade_database
from tidegate.ingest.exclusion import RuleSet
from tidegate.ingest.service import IngestParams, sort_lines
from tidegate.logs.store import NewLine, store_lines

BATCH = 100
CONNECTIONS = 16

LEVELS = ["INFO", "WARN", "ERROR", "DEBUG"]
APPS = ["web", "api", "worker", "auth"]


def batch_lines() -> list[dict[str, Any]]:
    return [
        {
            "line": f"GET /api/v1/items/{n} status={200 + (n % 3) * 100} took {n % 97}ms user=u{n}",
            "app": APPS[n % 4],
            "level": LEVELS[n % 4],
            "timestamp": 1_763_800_000_000 + n,
            "meta": {"status": 200 + (n % 3) * 100, "user": {"id": n}, "path": f"/api/{n}"},
        }
        for n in range(BATCH)
    ]


def rules(count: int) -> list[dict[str, Any]]:
    """Rules that match none of the benchmark's lines: a third each hosts, apps, query."""
    made: list[dict[str, Any]] = []
    queries = [
        'level:debug "connection reset"',
        "status:>=600",
        "app:cron -level:info",
        "user.id:==-1",
        '"health check" OR heartbeat',
        "path:/admin AND status:(>=500 <600)",
        "level:[fatal,panic]",
        "meta.region:eu-*",
    ]
    for n in range(count):
        kind = n % 3
        if kind == 0:
            made.append({"title": f"h{n}", "active": True, "hosts": [f"db-{n}-*", f"cache{n}"]})
        elif kind == 1:
            made.append({"title": f"a{n}", "active": True, "apps": [f"cron-{n}*", f"batch{n}"]})
        else:
            made.append({"title": f"q{n}", "active": True, "query": queries[n % len(queries)]})
    return made


def start_server(url: str, workdir: Path, workers: int, synchronous: str = "FULL") -> Server:
    env = {
        **os.environ,
        "TIDEGATE_DATABASE_URL": url,
        "TIDEGATE_DATA_DIR": str(workdir / "var"),
        "TIDEGATE_SECRET_KEY": "bench",
        "TIDEGATE_BOOTSTRAP": "0",
        "TIDEGATE_RATE_LIMIT_PER_MINUTE": "0",
        "TIDEGATE_SQLITE_SYNCHRONOUS": synchronous,
    }
    return Server(env, "--workers", str(workers))


def make_account_id(url: str) -> str:
    """Any account of the database (the floor writes lines to it)."""

    async def first() -> str:
        db = Database.connect(url)
        try:
            async with db.read_sessions() as session:
                return str((await session.execute(text("SELECT id FROM accounts"))).first()[0])  # type: ignore[index]
        finally:
            await db.dispose()

    return asyncio.run(first())


def make_account(base: str, token: str, rule_count: int) -> tuple[str, str]:
    enterprise = {"Authorization": f"Token {token}"}
    account_id = new_account(base, enterprise)
    headers = {**enterprise, "x-delegate-account-id": account_id}
    for rule in rules(rule_count):
        created = httpx.post(f"{base}/v1/config/ingestion/exclusions", json=rule, headers=headers)
        assert created.status_code == 200, created.text
    return account_id, ingestion_key(base, headers)


LUA = """
wrk.method = "POST"
wrk.body = [[%s]]
wrk.headers["Content-Type"] = "application/json"
wrk.headers["apikey"] = "%s"
"""


def run_wrk(base: str, key: str, seconds: int, workdir: Path) -> tuple[float, int]:
    script = workdir / f"ingest-{key[:6]}.lua"
    script.write_text(LUA % (json.dumps({"lines": batch_lines()}), key))
    out = subprocess.run(
        ["wrk", "-t2", f"-c{CONNECTIONS}", f"-d{seconds}s", "-s", str(script),
         f"{base}/logs/ingest?hostname=web-1&tags=bench"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    assert rps, out
    non_2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    failed = int(non_2xx.group(1)) if non_2xx else 0
    total = re.search(r"(\d+) requests in", out)
    assert total, out
    ok_share = 1 - failed / max(1, int(total.group(1)))
    return float(rps.group(1)) * BATCH * ok_share, failed


async def floor_lines_per_s(
    url: str, account_id: str, seconds: float, synchronous: str = "FULL"
) -> float:
    """store_lines alone: 8 concurrent writers, one transaction per 100-line batch."""
    db = Database.connect(url, sqlite_synchronous=synchronous)
    lines = [
        NewLine(line=item["line"], ts=item["timestamp"], host="web-1", app=item["app"],
                level=item["level"], tags=["bench"], meta=item["meta"])
        for item in batch_lines()
    ]  # fmt: skip
    done = 0
    deadline = time.monotonic() + seconds

    async def writer() -> None:
        nonlocal done
        while time.monotonic() < deadline:
            async with db.write_sessions() as session:
                await store_lines(
                    session=session, account_id=account_id, lines=lines, received_ms=0
                )
                await session.commit()
            done += BATCH

    started = time.monotonic()
    try:
        await asyncio.gather(*(writer() for _ in range(8)))
    finally:
        await db.dispose()
    return done / (time.monotonic() - started)


def judging_cost_us(rule_count: int) -> float:
    """Microseconds of CPU to build and judge one 100-line batch (no I/O)."""
    from tidegate.ingest.exclusion import CompiledRule

    compiled = RuleSet(
        [
            CompiledRule.build(
                rule_id=str(n), indexonly=True, hosts=rule.get("hosts"),
                apps=rule.get("apps"), query=rule.get("query"),
            )
            for n, rule in enumerate(rules(rule_count))
        ]
    )  # fmt: skip
    parsed = batch_lines()
    params = IngestParams(hostname="web-1", tags=("bench",))

    def once() -> None:
        sort_lines(account_id="a", params=params, lines=parsed, rules=compiled, received_ms=0)

    runs = 300
    return min(timeit.repeat(once, number=runs, repeat=3)) / runs * 1e6


def bench_backend(backend: str, seconds: int, workdir: Path) -> list[str]:
    pg_name = None
    if backend == "sqlite":
        url = f"sqlite+aiosqlite:///{workdir / 'bench.sqlite3'}"
    else:
        pg_name = asyncio.run(create_pg_database())
        url = f"postgresql+asyncpg://postgres@127.0.0.1:5432/{pg_name}"
    rows: list[str] = []
    try:
        asyncio.run(upgrade_database(url))
        token = asyncio.run(db_enterprise_token(url))
        floor: float | None = None
        results_full = 0.0
        for workers in (1, 4):
            server = start_server(url, workdir, workers)
            try:
                accounts = {n: make_account(server.base, token, n) for n in (0, 10, 100)}
                results = {
                    n: run_wrk(server.base, key, seconds, workdir)
                    for n, (_, key) in accounts.items()
                }
            finally:
                server.stop()
            if floor is None:  # once per backend, on the table the first runs filled
                floor = asyncio.run(floor_lines_per_s(url, accounts[0][0], 4))
            base = results[0][0]
            if workers == 1:
                results_full = base
            for n, (lines_per_s, failed) in results.items():
                rows.append(
                    f"| {backend:<8} | {workers:>7} | {n:>5} | {lines_per_s:>11,.0f} | "
                    f"{lines_per_s / base:>10.2f} | {lines_per_s / floor:>8.2f} | {floor:>11,.0f} | {failed:>7} |"
                )
        if backend == "sqlite":
            server = start_server(url, workdir, 1, synchronous="NORMAL")
            try:
                _, key = make_account(server.base, token, 0)
                normal, failed = run_wrk(server.base, key, seconds, workdir)
            finally:
                server.stop()
            account = make_account_id(url)
            direct = {
                mode: asyncio.run(floor_lines_per_s(url, account, 4, synchronous=mode))
                for mode in ("FULL", "NORMAL")
            }
            rows.append(
                f"\nSQLite synchronous: HTTP, 1 worker, 0 rules: FULL {results_full:,.0f} "
                f"vs NORMAL {normal:,.0f} lines/s (non-2xx {failed}); store_lines alone: "
                f"FULL {direct['FULL']:,.0f} vs NORMAL {direct['NORMAL']:,.0f} lines/s"
            )
    finally:
        if pg_name:
            asyncio.run(drop_pg_database(pg_name))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--databases", default="sqlite,postgres")
    args = parser.parse_args()

    print("In-process cost of building and judging one 100-line batch (CPU only):")
    zero = judging_cost_us(0)
    for n in (0, 10, 100):
        cost = judging_cost_us(n)
        print(f"  {n:>3} rules: {cost:8.0f} us per batch ({cost / zero:.2f}x the 0-rule cost)")
    print()
    print(
        f"POST /logs/ingest, {BATCH} lines per request, wrk -c{CONNECTIONS}, {args.seconds}s per cell"
    )
    print(
        "| backend  | workers | rules |     lines/s | vs 0 rules | vs floor | floor lines/s | non-2xx |"
    )
    print(
        "|----------|---------|-------|-------------|------------|----------|---------------|---------|"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for backend in args.databases.split(","):
            for row in bench_backend(backend.strip(), args.seconds, Path(tmp)):
                print(row, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark: ingestion throughput and server CPU through POST /logs/ingest against the
raw floor of the store, measured in the same run.

    python bench/bench_ingest.py [--seconds 10] [--databases sqlite,postgres]
                                 [--workers 1,4] [--rules 0,100]

For each backend, workers and rule count: `wrk` (Debian package; 2 threads, 16
connections) posts 100-line batches (realistic lines with app, level, timestamp and a
JSON meta) to a real `tidegate serve`; rules match none of the lines (a third each
hosts, apps and query rules), so every rule is evaluated for every line and every line
is stored. Reported: lines/s, the server's CPU (all its processes, user + system, from
/proc) per 1,000 lines, and on PostgreSQL the database's CPU too (every postgres
process of the machine, so PostgreSQL's own background work is included).

The floor writes the same rows (the same batch through ``line_rows``: same tables, the
FTS row on SQLite and the ``search`` column on PostgreSQL, usage included) with the
store's own functions and no HTTP: ``sqlite_write`` (``executemany``) on a stdlib
connection with the server's pragmas, and ``pg_write`` (binary COPY) on an asyncpg
connection, ``FLOOR_TX_LINES`` lines per transaction, for as long as one cell. Ratios
are lines/s against it. The issue's aims: at least 0.5 of the floor, at most 20 ms of
server CPU per 1,000 lines. Takes about (2 + 4 cells) x seconds per backend plus
start-up.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import timeit
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

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
from tidegate.db.sqlite_connect import open_writer
from tidegate.ingest.service import IngestParams, prepare
from tidegate.logs.exclusion import CompiledRule, RuleSet
from tidegate.logs.store import (
    NewLine,
    StoreBatch,
    batch_days,
    pg_write,
    sqlite_write,
)

BATCH = 100
CONNECTIONS = 16
FLOOR_TX_LINES = 5_000  # the writer's default group size (TIDEGATE_INGEST_GROUP_COMMIT_LINES)
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


def compiled_rules(count: int) -> RuleSet:
    return RuleSet(
        [
            CompiledRule.build(
                rule_id=str(n), indexonly=False, hosts=rule.get("hosts"),
                apps=rule.get("apps"), query=rule.get("query"),
            )
            for n, rule in enumerate(rules(count))
        ]
    )  # fmt: skip


def prepare_cost_us(rule_count: int) -> float:
    """CPU of everything a worker thread does for one 100-line body (parse, build,
    exclusion rules, rows): microseconds, best of three."""
    body = json.dumps({"lines": batch_lines()}).encode()
    compiled = compiled_rules(rule_count)
    params = IngestParams(hostname="web-1", tags=("bench",))

    def once() -> None:
        prepare(
            account_id="a", params=params, body=body, content_encoding=None,
            rules=compiled, received_ms=int(time.time() * 1000),
        )  # fmt: skip

    runs = 300
    return min(timeit.repeat(once, number=runs, repeat=3)) / runs * 1e6


def floor_batch(account_id: str) -> StoreBatch:
    lines = [
        NewLine(line=item["line"], ts=item["timestamp"], host="web-1", app=item["app"],
                level=item["level"], tags=["bench"], meta=item["meta"])
        for item in batch_lines()
    ]  # fmt: skip
    return StoreBatch.of(account_id=account_id, received_ms=int(time.time() * 1000), lines=lines)


@dataclass
class Cell:
    lines_per_s: float
    cpu_ms: float  # per 1,000 lines: the server (or the floor's process)
    db_cpu_ms: float | None  # per 1,000 lines: PostgreSQL's processes
    failed: int = 0


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def postgres_cpu(database: str | None = None) -> float:
    """CPU seconds of the PostgreSQL server: the postmaster with the children it has
    reaped (backends that closed count too), plus its children still running. With
    ``database``: only the backends connected to it now (other databases' work, and
    PostgreSQL's own background processes, left out; a backend that closed is lost)."""
    ticks = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text().strip() != "postgres":
                continue
            if database is not None:
                words = (entry / "cmdline").read_bytes().replace(b"\0", b" ").split()
                if database.encode() not in words:
                    continue
            fields = _stat(int(entry.name))
            parent = (Path("/proc") / fields[1] / "comm").read_text().strip()
        except OSError:
            continue  # gone meanwhile
        ticks += int(fields[11]) + int(fields[12])
        if parent != "postgres" and database is None:  # the postmaster's exited children
            ticks += int(fields[13]) + int(fields[14])
    return ticks / os.sysconf("SC_CLK_TCK")


def sqlite_floor(
    path: str, account_id: str, seconds: float, batch: StoreBatch | None = None
) -> Cell:
    """``batch`` (default: this benchmark's) written over and over for ``seconds``."""
    connection = open_writer(path, "FULL")
    connection.execute("PRAGMA cache_size=-65536")  # as the server's writer
    batch = batch or floor_batch(account_id)
    batches = [batch] * (FLOOR_TX_LINES // len(batch.rows))
    lines = 0
    started, cpu = time.perf_counter(), time.process_time()
    while time.perf_counter() - started < seconds:
        connection.execute("BEGIN IMMEDIATE")
        sqlite_write(connection, batches)
        connection.execute("COMMIT")
        lines += FLOOR_TX_LINES
    wall, used = time.perf_counter() - started, time.process_time() - cpu
    connection.close()
    return Cell(lines / wall, used / lines * 1e6, None)


async def pg_floor(
    url: str,
    account_id: str,
    seconds: float,
    batch: StoreBatch | None = None,
    database: str | None = None,
) -> Cell:
    import asyncpg

    from tidegate.db.engine import Database
    from tidegate.logs.store import ensure_partitions

    batch = batch or floor_batch(account_id)
    db = Database.connect(url)
    try:
        await ensure_partitions(db.write_engine, batch_days([batch]))
    finally:
        await db.dispose()
    connection = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql"))
    batches = [batch] * (FLOOR_TX_LINES // len(batch.rows))
    lines = 0
    started, cpu, db_cpu = time.perf_counter(), time.process_time(), postgres_cpu(database)
    try:
        while time.perf_counter() - started < seconds:
            async with connection.transaction():
                await pg_write(connection, batches)
            lines += FLOOR_TX_LINES
        # Before the connection closes: its backend is what ``database`` counts.
        wall, used = time.perf_counter() - started, time.process_time() - cpu
        db_used = postgres_cpu(database) - db_cpu
    finally:
        await connection.close()
    return Cell(lines / wall, used / lines * 1e6, db_used / lines * 1e6)


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


LUA = """
wrk.method = "POST"
wrk.body = [[%s]]
wrk.headers["Content-Type"] = "application/json"
wrk.headers["apikey"] = "%s"
"""


def run_wrk(base: str, key: str, seconds: int, workdir: Path) -> tuple[int, int]:
    """(lines acknowledged, non-2xx answers)."""
    script = workdir / f"ingest-{key[:6]}.lua"
    script.write_text(LUA % (json.dumps({"lines": batch_lines()}), key))
    out = subprocess.run(
        ["wrk", "-t2", f"-c{CONNECTIONS}", f"-d{seconds}s", "-s", str(script),
         f"{base}/logs/ingest?hostname=web-1&tags=bench"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    total = re.search(r"(\d+) requests in", out)
    assert total, out
    non_2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    failed = int(non_2xx.group(1)) if non_2xx else 0
    return (int(total.group(1)) - failed) * BATCH, failed


def make_key(base: str, token: str, rule_count: int) -> str:
    enterprise = {"Authorization": f"Token {token}"}
    account_id = new_account(base, enterprise)
    headers = {**enterprise, "x-delegate-account-id": account_id}
    for rule in rules(rule_count):
        created = httpx.post(f"{base}/v1/config/ingestion/exclusions", json=rule, headers=headers)
        assert created.status_code == 200, created.text
    return ingestion_key(base, headers)


def http_cells(
    url: str, workdir: Path, token: str, workers: int, rule_counts: list[int], seconds: int
) -> tuple[dict[int, Cell], str]:
    env = {
        **os.environ,
        "TIDEGATE_DATABASE_URL": url,
        "TIDEGATE_DATA_DIR": str(workdir / "var"),
        "TIDEGATE_SECRET_KEY": "bench",
        "TIDEGATE_BOOTSTRAP": "0",
        "TIDEGATE_RATE_LIMIT_PER_MINUTE": "0",
    }
    server = Server(env, "--workers", str(workers))
    cells: dict[int, Cell] = {}
    try:
        keys = {count: make_key(server.base, token, count) for count in rule_counts}
        account_id = new_account(server.base, {"Authorization": f"Token {token}"})
        pids = [server.pid, *children(server.pid)]
        for count, key in keys.items():
            run_wrk(server.base, key, 1, workdir)  # warm every worker's caches
            postgres = url.startswith("postgresql")
            cpu, db_cpu = cpu_seconds(*pids), postgres_cpu() if postgres else 0.0
            lines, failed = run_wrk(server.base, key, seconds, workdir)
            used = cpu_seconds(*pids) - cpu
            db_used = (postgres_cpu() - db_cpu) / lines * 1e6 if postgres else None
            cells[count] = Cell(lines / seconds, used / lines * 1e6, db_used, failed)
    finally:
        server.stop()
    return cells, account_id


def bench_backend(
    backend: str, seconds: int, workdir: Path, worker_counts: list[int], rule_counts: list[int]
) -> list[str]:
    pg_name = None
    if backend == "sqlite":
        path = workdir / "bench.sqlite3"
        url = f"sqlite+aiosqlite:///{path}"
    else:
        pg_name = asyncio.run(create_pg_database())
        url = f"postgresql+asyncpg://postgres@127.0.0.1:5432/{pg_name}"
    rows: list[str] = []
    try:
        asyncio.run(upgrade_database(url))
        token = asyncio.run(db_enterprise_token(url))
        floor: Cell | None = None
        for workers in worker_counts:
            cells, account_id = http_cells(url, workdir, token, workers, rule_counts, seconds)
            if floor is None:  # once per backend, on the tables the first cells filled
                floor = (
                    sqlite_floor(str(path), account_id, seconds)
                    if backend == "sqlite"
                    else asyncio.run(pg_floor(url, account_id, seconds))
                )
                rows.append(row(backend, "floor", "-", floor, floor))
            for count, cell in cells.items():
                rows.append(row(backend, str(workers), str(count), cell, floor))
    finally:
        if pg_name:
            asyncio.run(drop_pg_database(pg_name))
    return rows


def row(backend: str, workers: str, rule_count: str, cell: Cell, floor: Cell) -> str:
    db_cpu = f"{cell.db_cpu_ms:>9.1f}" if cell.db_cpu_ms is not None else f"{'-':>9}"
    return (
        f"| {backend:<8} | {workers:>7} | {rule_count:>5} | {cell.lines_per_s:>9,.0f} | "
        f"{cell.lines_per_s / floor.lines_per_s:>8.2f} | {cell.cpu_ms:>10.1f} | {db_cpu} | "
        f"{cell.failed:>7} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--databases", default="sqlite,postgres")
    parser.add_argument("--workers", default="1,4")
    parser.add_argument("--rules", default="0,100")
    args = parser.parse_args()
    worker_counts = [int(item) for item in args.workers.split(",")]
    rule_counts = [int(item) for item in args.rules.split(",")]

    print("Worker-thread CPU for one 100-line body (parse, build, rules, rows):")
    for count in rule_counts:
        print(f"  {count:>3} rules: {prepare_cost_us(count):6.0f} us")
    print()
    print(
        f"POST /logs/ingest, {BATCH} lines per request, wrk -t2 -c{CONNECTIONS}, "
        f"{args.seconds}s per cell; floor: {FLOOR_TX_LINES} lines per transaction, no HTTP. "
        "CPU columns: ms per 1,000 lines (server: every tidegate process, or the floor's "
        "own process; db: every postgres process)."
    )
    print(
        "| backend  | workers | rules |   lines/s | vs floor | server CPU |    db CPU | non-2xx |"
    )
    print(
        "|----------|---------|-------|-----------|----------|------------|-----------|---------|"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for backend in args.databases.split(","):
            for line in bench_backend(
                backend.strip(), args.seconds, Path(tmp), worker_counts, rule_counts
            ):
                print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

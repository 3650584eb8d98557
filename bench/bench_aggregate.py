"""Benchmark: GET /v1/aggregate over one account's 1,000,000 (or --lines) lines, both
backends, against the floor of hand-written SQL on the same tables in the same run.

    python bench/bench_aggregate.py [--lines 1000000] [--backends sqlite,postgres]
                                    [--data /tmp/tidegate-aggregate] [--runs 5]

The data set (seeded; 7 days; 14 hosts, 8 apps, 6 levels, JSON meta, a rare word in
0.1% of the lines) is written through the store's own write path (``line_rows`` and
``insert_rows``) once and kept in ``--data`` for later runs (PostgreSQL: a database
named after the line count). A real ``tidegate serve`` answers, over the whole range:
no query (the histogram alone, ``top=0``, and with the top values), ``level:error
app:web`` (exact in SQL), the rare word and a common word (both confirmed by the
matcher; the common one passes the candidate cap) and a ``meta`` field (each candidate's
meta decoded). Printed:
median wall time of ``--runs`` requests, the server's CPU per request, the answer's
``total`` and ``exact``, and the floor: the same histogram and top values by GROUP BY
queries written by hand, run by the drivers directly.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from harness import PG_ADMIN, Server, cpu_seconds

ROOT = Path(__file__).resolve().parent.parent
START_MS = 1_763_800_000_000  # 2025-11-22T08:26:40Z
SPAN_MS = 7 * 86_400_000
RARE = "zanzibarquux"
WORDS = [
    "request", "served", "timeout", "upstream", "connection", "refused", "user", "login",
    "failed", "cache", "miss", "disk", "full", "retrying", "payment", "accepted", "queue",
    "worker", "started", "stopped", "GET", "POST", "/api/v1/orders", "/health", "db",
]  # fmt: skip
APPS = ["api", "web", "worker", "healthcheck", "billing", "auth", "nginx", "cron"]
LEVELS = ["DEBUG", "INFO", "INFO", "INFO", "WARN", "ERROR"]
HOSTS = [f"web-{n:02d}.prod" for n in range(12)] + ["db-1.prod", "staging-3"]
# (query, top): the histogram alone (top=0), then with the top values.
CASES: list[tuple[str | None, int]] = [
    (None, 0),
    (None, 10),
    ("level:error app:web", 10),
    (RARE, 10),
    ("timeout", 10),
    ("status:500", 10),
]
BATCH = 20_000


def make_lines(rng: random.Random, start: int, end: int, total: int) -> list[Any]:
    from tidegate.logs.store import NewLine

    lines = []
    for index in range(start, end):
        text = " ".join(rng.choices(WORDS, k=rng.randint(6, 14))) + f" id={index}"
        if rng.random() < 0.001:
            text += f" {RARE}"
        meta = {
            "status": rng.choice([200, 200, 200, 201, 404, 500]),
            "duration_ms": rng.randint(1, 2000),
            "user": {"id": rng.randint(1, 99_999)},
        }
        lines.append(
            NewLine(
                line=text,
                ts=START_MS + index * SPAN_MS // total,
                host=rng.choice(HOSTS),
                app=rng.choice(APPS),
                level=rng.choice(LEVELS),
                meta=meta,
            )
        )
    return lines


async def generate(url: str, total: int) -> dict[str, str]:
    """The data set in a new database at ``url``: one account of ``total`` lines and a
    second one of 1,000 (never counted)."""
    from tidegate.db.engine import Database
    from tidegate.db.migrate import upgrade_database
    from tidegate.enterprise.schemas import AccountCreate
    from tidegate.enterprise.service import create_account, create_enterprise
    from tidegate.logs.store import insert_rows, line_rows

    await upgrade_database(url)
    db = Database.connect(url, sqlite_synchronous="OFF")
    try:
        async with db.write_sessions() as session:
            enterprise, token = await create_enterprise(session=session, name="bench")
            accounts = [
                await create_account(
                    session=session,
                    enterprise_id=enterprise.id,
                    body=AccountCreate(company="bench", owneremail=f"{name}@example.com"),
                )
                for name in ("measured", "other")
            ]
            await session.commit()
        rng = random.Random(8)
        received = int(time.time() * 1000)
        for account, count in ((accounts[0], total), (accounts[1], 1_000)):
            for low in range(0, count, BATCH):
                lines = make_lines(rng, low, min(count, low + BATCH), count)
                async with db.write_sessions() as session:
                    rows = line_rows(account.account_id, received, lines)
                    await insert_rows(await session.connection(), rows)
                    await session.commit()
    finally:
        await db.dispose()
    return {"url": url, "account": accounts[0].account_id, "token": token}


async def data_set(backend: str, total: int, directory: Path) -> dict[str, str]:
    marker = directory / f"{backend}-{total}.json"
    if marker.exists():
        known: dict[str, str] = json.loads(marker.read_text())
        return known
    if backend == "sqlite":
        url = f"sqlite+aiosqlite:///{directory / f'lines-{total}.sqlite3'}"
    else:
        import asyncpg

        name = f"tidegate_bench_aggregate_{total}"
        admin = await asyncpg.connect(PG_ADMIN)
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
            await admin.execute(f'CREATE DATABASE "{name}"')
        finally:
            await admin.close()
        url = f"postgresql+asyncpg://postgres@127.0.0.1:5432/{name}"
    print(f"generating {total:,} lines on {backend} ...", flush=True)
    began = time.perf_counter()
    made = await generate(url, total)
    if backend == "postgresql":
        await _pg(url, "VACUUM ANALYZE log_lines")
    print(f"  {time.perf_counter() - began:.0f} s", flush=True)
    marker.write_text(json.dumps(made))
    return made


async def _pg(url: str, sql: str, *args: Any) -> list[Any]:
    import asyncpg

    connection = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql"))
    try:
        return list(await connection.fetch(sql, *args))
    finally:
        await connection.close()


def floor_sql(backend: str, data: dict[str, str], width: int, top: int) -> float:
    """Seconds for the histogram and the three top-value lists of the unfiltered case by
    hand-written GROUP BY queries, through the driver directly."""
    account = data["account"]
    queries = [
        ("SELECT ts / {w} AS b, count(*) FROM log_lines WHERE account_id = {a} "
         "AND ts BETWEEN {f} AND {t} GROUP BY b"),
        *(
            f"SELECT {c}, count(*) AS n FROM log_lines WHERE account_id = {{a}} "
            f"AND ts BETWEEN {{f}} AND {{t}} AND {c} IS NOT NULL GROUP BY {c} "
            f"ORDER BY n DESC, {c} LIMIT {top}"
            for c in ("host_folded", "app_folded", "level_folded")
        ),
    ]  # fmt: skip
    began = time.perf_counter()
    if backend == "sqlite":
        import sqlite3

        connection = sqlite3.connect(data["url"].split("///", 1)[1])
        for query in queries:
            sql = query.format(w=width, a="?", f="?", t="?")
            connection.execute(sql, (account, START_MS, START_MS + SPAN_MS)).fetchall()
        connection.close()
    else:
        for query in queries:
            sql = query.format(w=width, a="$1", f="$2::bigint", t="$3::bigint")
            asyncio.run(_pg(data["url"], sql, account, START_MS, START_MS + SPAN_MS))
    return time.perf_counter() - began


def measure(backend: str, data: dict[str, str], runs: int, workdir: Path) -> None:
    env = {
        "TIDEGATE_DATABASE_URL": data["url"],
        "TIDEGATE_DATA_DIR": str(workdir / "var"),
        "TIDEGATE_SECRET_KEY": "bench",
        "TIDEGATE_RATE_LIMIT_PER_MINUTE": "0",
        "TIDEGATE_BOOTSTRAP": "0",
        "PYTHONPATH": str(ROOT / "src"),
    }
    server = Server(env, cwd=workdir)
    headers = {
        "Authorization": f"Token {data['token']}",
        "x-delegate-account-id": data["account"],
    }
    try:
        with httpx.Client(base_url=server.base, headers=headers, timeout=300) as http:
            width = 0
            for query, top in CASES:
                params: dict[str, Any] = {"from": START_MS, "to": START_MS + SPAN_MS, "top": top}
                if query:
                    params["query"] = query
                http.get("/v1/aggregate", params=params).raise_for_status()  # warm
                times, cpus = [], []
                for _ in range(runs):
                    cpu = cpu_seconds(server.pid)
                    began = time.perf_counter()
                    response = http.get("/v1/aggregate", params=params)
                    times.append(time.perf_counter() - began)
                    cpus.append(cpu_seconds(server.pid) - cpu)
                    response.raise_for_status()
                body = response.json()
                width = body["bucket_ms"]
                print(
                    f"  {backend:10} {query or '(no query)':20} top={top:<3} "
                    f"{statistics.median(times) * 1000:8.0f} ms  "
                    f"cpu {statistics.median(cpus) * 1000:6.0f} ms  "
                    f"total {body['total']:>9,}  exact {body['exact']}",
                    flush=True,
                )
        floors = [floor_sql(backend, data, width, 10) for _ in range(runs)]
        print(
            f"  {backend:10} {'floor: GROUP BY by hand':27} "
            f"{statistics.median(floors) * 1000:8.0f} ms  (histogram + 3 top lists, no query)"
        )
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--data", type=Path, default=Path("/tmp/tidegate-aggregate"))
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    args.data.mkdir(parents=True, exist_ok=True)
    print(f"GET /v1/aggregate over {args.lines:,} lines (7 days, 60 buckets wanted: 57 of 3 h)")
    for backend in args.backends.split(","):
        data = asyncio.run(data_set(backend, args.lines, args.data))
        workdir = args.data / f"server-{backend}"
        workdir.mkdir(exist_ok=True)
        measure(backend, data, args.runs, workdir)


if __name__ == "__main__":
    main()

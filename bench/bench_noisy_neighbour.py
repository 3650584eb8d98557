"""Benchmark: one account's export latency while another account floods expensive reads.

    python bench/bench_noisy_neighbour.py [--lines 50000] [--attackers 3] [--samples 10]
        [--rounds 3] [--backends sqlite,postgres] [--compare-src /path/to/old/src] [--no-bare]

Issue 21, finding 2. The attacker's account holds ``--lines`` lines; the victim's 100.
``--attackers`` clients loop on the attacker's heaviest accepted reads (an export and
an aggregation whose query is 100 OR'd terms that match nothing: every line is a
candidate to test), while the victim asks for its first export page ``--samples``
times, one after another. The same is measured with no attacker ("quiet"), in
``--rounds`` alternating rounds of both (the machine's other load drifts). Prints the
victim's median and max latency both ways and the ratio under attack over quiet (goal:
under 2x), and how the attacker's reads were answered (200, or 422 past the work
budget). With ``--compare-src``, a second server runs that source tree (the code before
issue 21) on the same database.

The peer ("bare"): each round also measures the victim while the attacker's kind of
statement (its 100 terms, every line a candidate) runs in a loop one at a time directly
on the database, in a process of its own outside tidegate: on PostgreSQL a backend
of the database server, on SQLite a process of the bench's priority. That is one core
kept busy by the attacker's work, what the per-account share lets an attacker have;
no scheduler in tidegate can take it back, so the victim's ratio under the bare
statement is the floor of what the share can reach on this machine.

Each ratio is printed twice: the medians of all phases, and the median of the rounds'
own ratios (each attacked or bare phase over the quiet phase just before it), which the
drift between rounds does not move. Below each backend, the cores tidegate's server and
the database's processes (PostgreSQL's backends of the bench's database, the bare
peer) kept busy in each phase: CPU seconds a second.

One worker per server; the machine's other load counts against both runs alike, so
read the ratio, not the absolute times.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from harness import (
    Server,
    cli_enterprise_token,
    cpu_seconds,
    create_pg_database,
    drop_pg_database,
    new_account,
    server_env,
    store_batches,
)

ROOT = Path(__file__).resolve().parent.parent
BASE_MS = 1_763_800_000_000
ATTACK_QUERY = " OR ".join(f"zq{n:02}x" for n in range(100))
WORDS = ("GET", "POST", "/api/orders", "/healthz", "served", "in", "ms", "user", "cache", "miss")


def batches(count: int) -> Iterator[list[Any]]:
    from tidegate.logs.store import NewLine

    for start in range(0, count, 5000):
        yield [
            NewLine(
                line=" ".join(WORDS[(n + k) % len(WORDS)] for k in range(8)) + f" {n}",
                ts=BASE_MS + n,
                host=f"web-{n % 7}",
                app="api",
                level="info",
                meta={"status": 200 + n % 5, "path": f"/p/{n % 50}"},
            )
            for n in range(start, min(count, start + 5000))
        ]


def export_params(query: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"from": BASE_MS // 1000 - 60, "to": BASE_MS // 1000 + 86_400}
    if query is not None:
        params["query"] = query
    return params


async def victim_latencies(
    http: httpx.AsyncClient, headers: dict[str, str], samples: int
) -> list[float]:
    latencies = []
    for _ in range(samples):
        sent = time.monotonic()
        response = await http.get("/v2/export", params=export_params(), headers=headers)
        assert response.status_code == 200, response.text
        latencies.append(time.monotonic() - sent)
    return latencies


async def attack(
    http: httpx.AsyncClient, headers: dict[str, str], stop: asyncio.Event, answers: Counter[int]
) -> None:
    aggregate = {"from": BASE_MS - 60_000, "to": BASE_MS + 86_400_000, "query": ATTACK_QUERY}
    while not stop.is_set():
        export = await http.get("/v2/export", params=export_params(ATTACK_QUERY), headers=headers)
        answers[export.status_code] += 1
        if stop.is_set():
            break
        counted = await http.get("/v1/aggregate", params=aggregate, headers=headers)
        answers[counted.status_code] += 1


def bare_statement(dialect: str) -> str:
    """The attacker's kind of read as one plain statement: every line of the account is
    tested against its 100 terms (PostgreSQL: with the trigram index off, as the
    attacker's ordered page scan does)."""
    column = "search" if dialect == "postgresql" else "line"
    placeholder = "$1" if dialect == "postgresql" else "?"
    terms = " OR ".join(f"{column} LIKE '%zq{n:02}x%'" for n in range(100))
    return f"SELECT count(*) FROM log_lines WHERE account_id = {placeholder} AND ({terms})"


def bare_load(database_url: str, account_id: str) -> None:
    """The bare peer's process: the statement in a loop until it is terminated; says
    "ready" on stdout as it starts the first."""
    if database_url.startswith("sqlite"):
        connection = sqlite3.connect(database_url.split("///", 1)[1])
        print("ready", flush=True)
        while True:
            connection.execute(bare_statement("sqlite"), (account_id,)).fetchall()

    async def loop() -> None:
        import asyncpg

        connection = await asyncpg.connect(database_url.replace("+asyncpg", ""))
        # One backend, as the attacker's page scan (no parallel workers). A backend
        # notices its client gone only when it next writes to it: without the check,
        # the statement the peer was terminated in would run on (seconds) into the
        # next quiet phase.
        await connection.execute(
            "SET enable_bitmapscan = off; SET max_parallel_workers_per_gather = 0; "
            "SET client_connection_check_interval = 50"
        )
        print("ready", flush=True)
        while True:
            await connection.fetch(bare_statement("postgresql"), account_id)

    asyncio.run(loop())


class CpuMeter:
    """The CPU time of tidegate's server and of the database's processes (PostgreSQL's
    backends of the bench's database; the bare peer's process), per phase: how many of
    the machine's cores each kept busy."""

    def __init__(self, server_pid: int, pg_name: str | None) -> None:
        self.server_pid = server_pid
        self.pg_name = pg_name
        self.peer_pids: list[int] = []
        self.busy: dict[str, list[tuple[float, float]]] = {}

    async def _database_pids(self) -> list[int]:
        if self.pg_name is None:
            return list(self.peer_pids)
        import asyncpg

        connection = await asyncpg.connect(f"postgresql://postgres@127.0.0.1:5432/{self.pg_name}")
        try:
            rows = await connection.fetch(
                "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
                self.pg_name,
            )
        finally:
            await connection.close()
        return [row["pid"] for row in rows] + self.peer_pids

    async def snapshot(self) -> tuple[float, dict[int, float]]:
        database: dict[int, float] = {}
        for pid in await self._database_pids():
            with contextlib.suppress(OSError):  # gone meanwhile
                database[pid] = cpu_seconds(pid)
        return time.monotonic(), {0: cpu_seconds(self.server_pid), **database}

    def since(
        self, phase: str, start: tuple[float, dict[int, float]], end: tuple[float, dict[int, float]]
    ) -> None:
        wall = end[0] - start[0]
        server = end[1][0] - start[1][0]
        database = sum(cpu - start[1].get(pid, 0.0) for pid, cpu in end[1].items() if pid)
        self.busy.setdefault(phase, []).append((server / wall, database / wall))

    def summary(self, phase: str) -> str:
        rows = self.busy.get(phase, [])
        if not rows:
            return ""
        server = statistics.median(row[0] for row in rows)
        database = statistics.median(row[1] for row in rows)
        return f"{phase}: tidegate {server:.2f}, database {database:.2f}"


@contextlib.contextmanager
def bare_peer(database_url: str, account_id: str, meter: CpuMeter) -> Iterator[None]:
    process = subprocess.Popen(
        [sys.executable, __file__, "--bare-load", database_url, account_id],
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        stdout=subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        process.stdout.readline()  # connected: its statement starts now
        meter.peer_pids = [process.pid]
        yield
    finally:
        meter.peer_pids = []
        process.terminate()
        process.wait()


async def measure(
    base: str,
    attacker: dict[str, str],
    victim: dict[str, str],
    *,
    attackers: int,
    samples: int,
    rounds: int,
    bare: tuple[str, str] | None,
    meter: CpuMeter,
) -> dict[str, Any]:
    """``rounds`` of quiet then under attack (then quiet and the bare peer, with
    ``bare``: the database's URL and the attacker's account), ``samples`` of each per
    round: the machine's other load drifts, and alternating spreads the drift over all
    alike."""
    quiet: list[float] = []
    attacked: list[float] = []
    bared: list[float] = []
    # Each round's ratio, over the quiet phase just before it: the drift of the
    # machine's other load between rounds cancels out.
    round_ratios: dict[str, list[float]] = {"attacked": [], "bare": []}
    answers = Counter[int]()
    async with httpx.AsyncClient(base_url=base, timeout=600) as http:
        await victim_latencies(http, victim, 2)  # warm up
        for _ in range(rounds):
            start = await meter.snapshot()
            calm = await victim_latencies(http, victim, samples)
            meter.since("quiet", start, await meter.snapshot())
            stop = asyncio.Event()
            flood = [
                asyncio.create_task(attack(http, attacker, stop, answers)) for _ in range(attackers)
            ]
            try:
                await asyncio.sleep(0.5)  # the attacker's reads take the threads first
                start = await meter.snapshot()
                under = await victim_latencies(http, victim, samples)
                meter.since("attacked", start, await meter.snapshot())
            finally:
                stop.set()
                await asyncio.gather(*flood)
            quiet += calm
            attacked += under
            round_ratios["attacked"].append(statistics.median(under) / statistics.median(calm))
            if bare is not None:
                calm = await victim_latencies(http, victim, samples)
                with bare_peer(*bare, meter):
                    await asyncio.sleep(0.2)  # into its first statement
                    start = await meter.snapshot()
                    under = await victim_latencies(http, victim, samples)
                    meter.since("bare", start, await meter.snapshot())
                quiet += calm
                bared += under
                round_ratios["bare"].append(statistics.median(under) / statistics.median(calm))
    return {
        "quiet": quiet,
        "attacked": attacked,
        "bare": bared,
        "round_ratios": round_ratios,
        "cores": "; ".join(
            filter(None, (meter.summary(phase) for phase in ("quiet", "attacked", "bare")))
        ),
        "answers": dict(sorted(answers.items())),
    }


def report(name: str, row: dict[str, Any]) -> str:
    quiet, attacked = statistics.median(row["quiet"]), statistics.median(row["attacked"])
    return (
        f"{name:>24}: victim p50 quiet {quiet * 1000:.0f} ms, under attack "
        f"{attacked * 1000:.0f} ms (max {max(row['attacked']) * 1000:.0f} ms); "
        f"ratio p50 {attacked / quiet:.2f}x, max/quiet-max "
        f"{max(row['attacked']) / max(row['quiet']):.2f}x, median of the rounds' ratios "
        f"{statistics.median(row['round_ratios']['attacked']):.2f}x; "
        f"attacker answers {row['answers']}"
        + (
            f"; bare peer {statistics.median(row['bare']) * 1000:.0f} ms, ratio p50 "
            f"{statistics.median(row['bare']) / quiet:.2f}x, median of the rounds' ratios "
            f"{statistics.median(row['round_ratios']['bare']):.2f}x"
            if row["bare"]
            else ""
        )
        + f"\n{'':>26}cores busy (CPU s per s, median of the rounds) {row['cores']}"
    )


def run_backend(backend: str, trees: dict[str, str], args: argparse.Namespace) -> list[str]:
    work = Path(tempfile.mkdtemp(prefix="tidegate-bench-"))
    pg_name = None
    if backend == "sqlite":
        database_url = f"sqlite+aiosqlite:///{work / 'bench.sqlite3'}"
    else:
        pg_name = asyncio.run(create_pg_database())
        database_url = f"postgresql+asyncpg://postgres@127.0.0.1:5432/{pg_name}"
    env = server_env(database_url, work)
    lines: list[str] = []
    accounts: tuple[str, str] | None = None
    try:
        token = cli_enterprise_token(env)
        enterprise = {"Authorization": f"Token {token}"}
        for name, src in trees.items():
            server = Server({**env, "PYTHONPATH": src}, "--log-level", "warning", output=None)
            try:
                if accounts is None:
                    accounts = (
                        new_account(server.base, enterprise),
                        new_account(server.base, enterprise),
                    )
                    asyncio.run(store_batches(database_url, accounts[0], batches(args.lines)))
                    asyncio.run(store_batches(database_url, accounts[1], batches(100)))
                attacker = {**enterprise, "x-delegate-account-id": accounts[0]}
                victim = {**enterprise, "x-delegate-account-id": accounts[1]}
                row = asyncio.run(
                    measure(
                        server.base,
                        attacker,
                        victim,
                        attackers=args.attackers,
                        samples=args.samples,
                        rounds=args.rounds,
                        bare=None if args.no_bare else (database_url, accounts[0]),
                        meter=CpuMeter(server.pid, pg_name),
                    )
                )
                lines.append(report(f"{backend}, {name}", row))
            finally:
                server.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if pg_name is not None:
            asyncio.run(drop_pg_database(pg_name))
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lines", type=int, default=50_000)
    parser.add_argument("--attackers", type=int, default=3)
    parser.add_argument("--samples", type=int, default=10, help="victim's pages per phase")
    parser.add_argument("--rounds", type=int, default=3, help="quiet/attack rounds")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--compare-src", type=Path, default=None)
    parser.add_argument("--no-bare", action="store_true", help="leave out the bare peer")
    parser.add_argument("--bare-load", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare_load:
        bare_load(*args.bare_load)
        return 0
    trees = {"this tree": str(ROOT / "src")}
    if args.compare_src is not None:
        trees["compare"] = str(args.compare_src.resolve())
    results: list[str] = []
    for backend in args.backends.split(","):
        results.extend(run_backend(backend, trees, args))
    print(
        f"victim's first export page (100 lines) while {args.attackers} clients loop on "
        f"100-term exports and aggregations over the attacker's {args.lines:,} lines"
    )
    for line in results:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())

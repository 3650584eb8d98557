"""Benchmark: an idle alert round (no view alerting, no index-rate or pipeline alert, no
new line, nothing due) against its floor, on SQLite and PostgreSQL, in one run.

    python bench/bench_alert_idle.py [--rounds 300] [--databases sqlite,postgres]
                                     [--compare-src /path/to/other/src]

Every worker runs a round each ``TIDEGATE_ALERT_TICK_S`` (1 s) whatever it has to do,
so an idle round's cost is what an idle server spends. For each backend, on a new
migrated database with one account: ``AlertRunner.round()`` of this checkout (and of
``--compare-src``'s tree, e.g. the code before a change; each in a process of its own,
warmed by three rounds), and the floor: one ``SELECT 1`` through the same ``Database``'s
read session, which is the least a round that asks the database anything can cost.
Printed: SQL statements per round (SQLAlchemy's ``before_cursor_execute``), the
process's CPU per round (user + system), and the ratio to the floor's CPU.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from harness import create_pg_database, drop_pg_database

CHILD = r"""
import asyncio, json, resource, sys, time
from sqlalchemy import event, text
from tidegate.alerts.runner import AlertRunner
from tidegate.auth.secrets import Sealer, secret_bytes
from tidegate.config import Settings
from tidegate.db.engine import Database

def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime

async def main(url, data_dir, rounds, what):
    db = Database.connect(url)
    seen = []
    engines = {id(e.sync_engine): e.sync_engine for e in (db.read_engine, db.write_engine)}
    for engine in engines.values():
        event.listen(engine, "before_cursor_execute", lambda *a: seen.append(1))
    runner = AlertRunner(db, Sealer(secret_bytes("bench")), Settings(database_url=url, secret_key="bench", data_dir=data_dir))

    async def floor():
        async with db.read_sessions() as session:
            await session.execute(text("SELECT 1"))

    step = runner.round if what == "round" else floor
    for _ in range(3):
        await step()
    seen.clear()
    started, wall = cpu(), time.perf_counter()
    for _ in range(rounds):
        await step()
    used, wall = cpu() - started, time.perf_counter() - wall
    await runner.close()
    await db.dispose()
    print(json.dumps({"statements": len(seen) / rounds, "cpu_ms": used / rounds * 1000, "wall_ms": wall / rounds * 1000}))

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]))
"""


def measure(url: str, data_dir: str, rounds: int, what: str, src: str | None) -> dict[str, float]:
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src
    out = subprocess.run(
        [sys.executable, "-c", CHILD, url, data_dir, str(rounds), what],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


async def prepare(backend: str, tmp: Path) -> tuple[str, str | None]:
    from tidegate.db.migrate import upgrade_database

    if backend == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp / f'idle-{uuid.uuid4().hex[:8]}.sqlite3'}"
        name = None
    else:
        name = await create_pg_database()
        url = f"postgresql+asyncpg://postgres@127.0.0.1:5432/{name}"
    await upgrade_database(url)
    return url, name


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--databases", default="sqlite,postgres")
    parser.add_argument("--compare-src", default=None)
    args = parser.parse_args()
    print(
        f"Idle alert rounds, {args.rounds} per cell after 3 warm-up rounds; load {os.getloadavg()[0]:.1f}"
    )
    print("| backend  | what                 | statements/round | CPU ms/round | vs floor |")
    print("|----------|----------------------|------------------|--------------|----------|")
    cells = [("round", None, "tidegate round")]
    if args.compare_src:
        cells.append(("round", args.compare_src, f"round @{Path(args.compare_src).parent.name}"))
    with tempfile.TemporaryDirectory() as tmp:
        for backend in args.databases.split(","):
            url, name = asyncio.run(prepare(backend.strip(), Path(tmp)))
            try:
                floor = measure(url, tmp, args.rounds, "floor", None)
                rows = [("floor: SELECT 1", floor)]
                for what, src, label in cells:
                    rows.append((label, measure(url, tmp, args.rounds, what, src)))
                for label, cell in rows:
                    print(
                        f"| {backend:<8} | {label:<20} | {cell['statements']:16.1f} "
                        f"| {cell['cpu_ms']:12.2f} | {cell['cpu_ms'] / floor['cpu_ms']:7.1f}x |",
                        flush=True,
                    )
            finally:
                if name is not None:
                    asyncio.run(drop_pg_database(name))
    print(f"load at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

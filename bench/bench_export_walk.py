"""The walk of all matches (export pages to the end) against its floors, per tier.

    python bench/bench_export_walk.py --lines 100k [--backends sqlite,postgres]
        [--compare-src /path/to/old/src] [--profile]

Loads the search data set (``search_dataset.py``, nested meta on most lines) through the
store's write path, then walks every line of the measured account as ``/v2/export``
answers it (``export_page``: the page's bytes, 10,000 lines a page, oldest first, no
query), in process, no HTTP; first with every line in the row store, then after the
compactor moved them all into segments. Each source tree runs in a process of its own
on the same database (``--compare-src``: the code before a change, in the same run);
the answers of both trees must be the same bytes (the pages' ``pagination_id`` aside, a
sealed cursor is never the same twice), else it prints MISMATCH and exits 1.

Floors, same rows, same pages: the raw driver (``sqlite3`` / asyncpg) fetching the
row store's columns in (ts, id) order, and DuckDB alone reading the segment files in
that order, each with ``orjson.dumps`` of every page's rows (lists of the stored
values, JSON columns as their text). Printed: lines/s, CPU ms per 1,000 lines (this
process's: the driver's and DuckDB's work; PostgreSQL's server is not counted) and the
ratio to the floor. ``--profile``: this tree's walk under cProfile (top functions).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent
PAGE = 10_000
COLUMNS = "id, ts, host, app, level, env, file, ip, mac, tags, meta, line, meta_unindexed"


def walk_child(args: argparse.Namespace) -> dict[str, Any]:
    """In a child process of one source tree: the walk through ``export_page``."""
    import orjson

    from tidegate.auth.secrets import Sealer
    from tidegate.db.engine import Database
    from tidegate.export.schemas import ExportRequest
    from tidegate.export.service import export_page
    from tidegate.logs.filtering import parse_line_filter

    async def run() -> dict[str, Any]:
        db = Database.connect(args.url)
        db.segment_dir = Path(args.segments)
        sealer = Sealer(b"b" * 32)
        digest = hashlib.sha256()
        lines = pages = 0
        wall = cpu = 0.0
        cursor: str | None = None
        try:
            while True:
                request = ExportRequest(
                    from_ms=args.from_ms,
                    to_ms=args.to_ms,
                    size=PAGE,
                    line_filter=parse_line_filter(hosts=None, apps=None, levels=None, query=None),
                    prefer="head",
                    pagination_id=cursor,
                )
                started, cpu_started = time.perf_counter(), time.process_time()
                async with db.read_sessions() as session:
                    body = await export_page(
                        database=db,
                        session=session,
                        sealer=sealer,
                        account_id=args.account,
                        request=request,
                    )
                wall += time.perf_counter() - started
                cpu += time.process_time() - cpu_started
                page = orjson.loads(body)
                cursor = page["pagination_id"]
                lines += len(page["lines"])
                pages += 1
                digest.update(body if cursor is None else body.replace(cursor.encode(), b""))
                if cursor is None:
                    break
        finally:
            await db.dispose()
        return {"wall": wall, "cpu": cpu, "lines": lines, "pages": pages, "sha": digest.hexdigest()}

    if not args.profile:
        return asyncio.run(run())
    import cProfile
    import pstats

    from tidegate.export import service

    # The page runs in an export worker thread: profile it there.
    profiler = cProfile.Profile()
    off_loop = service.run_off_loop

    def profiled(page: Any) -> Any:
        def run_page(reader: Any) -> Any:
            profiler.enable()
            try:
                return page(reader)
            finally:
                profiler.disable()

        return run_page

    service.run_off_loop = lambda *, page, **kwargs: off_loop(page=profiled(page), **kwargs)  # type: ignore[assignment]
    result = asyncio.run(run())
    pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(30)
    return result


def sqlite_floor(path: str, account: str, from_ms: int, to_ms: int) -> tuple[float, float, int]:
    import orjson

    started, cpu_started = time.perf_counter(), time.process_time()
    connection = sqlite3.connect(path)
    lines = 0
    try:
        cursor = connection.execute(
            f"SELECT {COLUMNS} FROM log_lines WHERE account_id = ? AND ts >= ? AND ts <= ? "
            "ORDER BY ts, id",
            (account, from_ms, to_ms),
        )
        while batch := cursor.fetchmany(PAGE):
            orjson.dumps(batch)
            lines += len(batch)
    finally:
        connection.close()
    return time.perf_counter() - started, time.process_time() - cpu_started, lines


async def postgres_floor(
    url: str, account: str, from_ms: int, to_ms: int
) -> tuple[float, float, int]:
    import asyncpg
    import orjson

    dsn = url.replace("postgresql+asyncpg://", "postgresql://")
    columns = COLUMNS.replace("tags", "tags::text").replace("meta,", "meta::text,")
    columns = columns.replace("meta_unindexed", "meta_unindexed::text")
    started, cpu_started = time.perf_counter(), time.process_time()
    connection = await asyncpg.connect(dsn)
    lines = 0
    after = (from_ms - 1, 0)
    try:
        while True:
            batch = await connection.fetch(
                f"SELECT {columns} FROM log_lines WHERE account_id = $1 AND ts <= $2 "
                "AND (ts, id) > ($3, $4) ORDER BY ts, id LIMIT $5",
                account,
                to_ms,
                after[0],
                after[1],
                PAGE,
            )
            if not batch:
                break
            orjson.dumps([tuple(row) for row in batch])
            lines += len(batch)
            after = (batch[-1]["ts"], batch[-1]["id"])
    finally:
        await connection.close()
    return time.perf_counter() - started, time.process_time() - cpu_started, lines


def duckdb_floor(files: list[str], from_ms: int, to_ms: int) -> tuple[float, float, int]:
    import duckdb
    import orjson

    started, cpu_started = time.perf_counter(), time.process_time()
    connection = duckdb.connect(config={"threads": 1})
    source = "read_parquet([" + ", ".join(f"'{path}'" for path in files) + "])"
    result = connection.execute(
        f"SELECT {COLUMNS} FROM {source} WHERE ts >= ? AND ts <= ? ORDER BY ts, id",
        [from_ms, to_ms],
    )
    lines = 0
    while batch := result.fetchmany(PAGE):
        orjson.dumps(batch)
        lines += len(batch)
    return time.perf_counter() - started, time.process_time() - cpu_started, lines


def run_tree(src: str, target_args: list[str], profile: bool) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, str(BENCH)])}
    command = [
        sys.executable,
        __file__,
        "--child",
        *target_args,
        *(["--profile"] if profile else []),
    ]
    done = subprocess.run(command, env=env, check=True, stdout=subprocess.PIPE)
    result: dict[str, Any] = json.loads(done.stdout.decode().strip().splitlines()[-1])
    return result


def report(
    label: str, walks: dict[str, dict[str, Any]], floor: tuple[float, float, int]
) -> list[str]:
    problems = []
    floor_wall, floor_cpu, floor_lines = floor
    floor_cpu_k = floor_cpu / floor_lines * 1000 * 1000
    print(
        f"{label:26} floor: {floor_lines / floor_wall:9,.0f} lines/s, "
        f"{floor_cpu_k:6.1f} CPU ms per 1,000 lines",
        flush=True,
    )
    for name, walk in walks.items():
        cpu_k = walk["cpu"] / walk["lines"] * 1000 * 1000
        print(
            f"{label:26} {name:10}: {walk['lines'] / walk['wall']:9,.0f} lines/s, "
            f"{cpu_k:6.1f} CPU ms per 1,000 lines ({cpu_k / floor_cpu_k:4.1f}x the floor's CPU, "
            f"{walk['wall'] / floor_wall * floor_lines / walk['lines']:4.1f}x its time), "
            f"{walk['lines']:,} lines in {walk['pages']} pages",
            flush=True,
        )
        if walk["lines"] != floor_lines:
            problems.append(f"MISMATCH {label} {name}: {walk['lines']} lines, floor {floor_lines}")
    if len({walk["sha"] for walk in walks.values()}) > 1:
        problems.append(f"MISMATCH {label}: the trees' answers differ")
    return problems


async def run(args: argparse.Namespace, work: Path) -> int:
    from bench_segments import compact_all, load
    from search_stores import PostgresTarget, SqliteTarget, Target

    targets: list[Target] = []
    for backend in args.backends:
        kind = SqliteTarget if backend == "sqlite" else PostgresTarget
        targets.append(kind(dataset=None, work=work))
    expected = await load(targets, seed=args.seed, lines=args.lines, extra=())
    trees = {"this tree": str(ROOT / "src")}
    if args.compare_src is not None:
        trees = {"before": str(args.compare_src.resolve()), **trees}
    problems: list[str] = []
    print(f"load average before the walks: {os.getloadavg()}", flush=True)
    for target in targets:
        assert target.loaded is not None
        account = target.loaded.account_id
        segment_dir = work / f"segments-{target.backend}"
        child_args = [
            "--url", target.url, "--segments", str(segment_dir), "--account", account,
            "--from-ms", str(expected.first_ms), "--to-ms", str(expected.last_ms),
        ]  # fmt: skip
        for tier in ("row store", "segments"):
            if tier == "segments":
                moved_s, _cpu, moved = await compact_all(target, segment_dir, None)
                print(f"{target.backend}: compacted {moved:,} lines in {moved_s:.1f} s", flush=True)
                files = [
                    str(p) for p in sorted(segment_dir.rglob("*.parquet")) if account in str(p)
                ]
                floor = duckdb_floor(files, expected.first_ms, expected.last_ms)
            elif target.backend == "sqlite":
                floor = sqlite_floor(str(target.path), account, expected.first_ms, expected.last_ms)  # type: ignore[attr-defined]
            else:
                floor = await postgres_floor(
                    target.url, account, expected.first_ms, expected.last_ms
                )
            walks = {
                name: run_tree(src, child_args, args.profile and name == "this tree")
                for name, src in trees.items()
            }
            problems += report(f"{target.backend} {tier}", walks, floor)
        await target.drop()
    print(f"load average after: {os.getloadavg()}")
    if problems:
        print("\n".join(problems))
        return 1
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lines", default="100k")
    parser.add_argument("--backends", default="sqlite", type=lambda text: text.split(","))
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--compare-src", type=Path, default=None)
    parser.add_argument("--profile", action="store_true")
    # The child's (one source tree's walk).
    parser.add_argument("--child", action="store_true")
    parser.add_argument("--url")
    parser.add_argument("--segments")
    parser.add_argument("--account")
    parser.add_argument("--from-ms", type=int)
    parser.add_argument("--to-ms", type=int)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(walk_child(args)))
        return 0
    from bench_search import parse_count

    args.lines = parse_count(args.lines)
    with tempfile.TemporaryDirectory(prefix="tidegate-bench-walk-") as work:
        return asyncio.run(run(args, Path(work)))


if __name__ == "__main__":
    sys.exit(main())

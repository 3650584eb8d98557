"""The log store with and without segments, and DuckDB alone on the same Parquet.

``python bench/bench_segments.py --lines 1m [--backends sqlite,postgres]``

Loads the search data set (``search_dataset.py``: one measured account's lines over 7
days plus 5% of three other accounts', the six cases of issue 19) through the store's
write path into a scratch database, then for each case, in process through the same
code the server runs (``run_off_loop``, the export and aggregation services, their
worker threads; no HTTP):

- the first page (``/v2/export``'s, 10,000 lines, oldest first), the walk of all
  matches (pages of 10,000 to the end) and the aggregation (histogram of 60 buckets and
  the top 10 hosts, apps and levels);
- first with every line in the row store, then after the compactor moved them all into
  segments (the time and lines/s of the move are printed), then DuckDB alone over the
  same Parquet files with hand-written SQL (a floor: LIKE on the folded line or meta, no
  confirmation, so it may count a few near misses the matcher would reject).

Every walk must return exactly the lines the Python matcher selected while generating,
and every aggregation must agree with its walk; otherwise it prints MISMATCH and exits
1. Disk: the row store's file or database, and the segment files, per million lines.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb

from bench_search import load, parse_count
from search_dataset import CASES, Case, Expected
from search_stores import PostgresTarget, SqliteTarget, Target
from tidegate.aggregate.schemas import AggregateRequest
from tidegate.aggregate.service import aggregation
from tidegate.auth.secrets import Sealer
from tidegate.db.engine import Database
from tidegate.export.schemas import ExportRequest
from tidegate.export.service import page_of_lines
from tidegate.logs.compactor import CompactorConfig, compact_round
from tidegate.logs.filtering import parse_line_filter
from tidegate.logs.reading import PageReader, run_off_loop
from tidegate.logs.segments import relation

PAGE = 10_000
RUNS = 3


def export_request(case: Case, expected: Expected, cursor: str | None) -> ExportRequest:
    return ExportRequest(
        from_ms=expected.first_ms,
        to_ms=expected.last_ms,
        size=PAGE,
        line_filter=parse_line_filter(hosts=None, apps=None, levels=None, query=case.query),
        prefer="head",
        pagination_id=cursor,
    )


async def on_reader(db: Database, account_id: str, work: Callable[[PageReader], Any]) -> Any:
    async with db.read_sessions() as session:
        return await run_off_loop(database=db, session=session, account_id=account_id, page=work)


async def first_page_s(
    db: Database, sealer: Sealer, account_id: str, case: Case, expected: Expected
) -> float:
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        await on_reader(
            db,
            account_id,
            lambda reader: page_of_lines(
                reader=reader,
                sealer=sealer,
                account_id=account_id,
                request=export_request(case, expected, None),
            ),
        )
        times.append(time.perf_counter() - started)
    return statistics.median(times)


async def walk(
    db: Database, sealer: Sealer, account_id: str, case: Case, expected: Expected
) -> tuple[float, list[int]]:
    ids: list[int] = []
    cursor: str | None = None
    started = time.perf_counter()
    while True:
        request = export_request(case, expected, cursor)
        body = await on_reader(
            db,
            account_id,
            lambda reader, request=request: page_of_lines(
                reader=reader, sealer=sealer, account_id=account_id, request=request
            ),
        )
        ids.extend(int(line["_id"]) for line in body["lines"])
        cursor = body["pagination_id"]
        if cursor is None:
            return time.perf_counter() - started, ids


async def aggregate_s(
    db: Database, account_id: str, case: Case, expected: Expected
) -> tuple[float, Any]:
    request = AggregateRequest(
        from_ms=expected.first_ms,
        to_ms=expected.last_ms,
        buckets=60,
        top=10,
        line_filter=parse_line_filter(hosts=None, apps=None, levels=None, query=case.query),
    )
    times = []
    answer = None
    for _ in range(RUNS):
        started = time.perf_counter()
        answer = await on_reader(
            db,
            account_id,
            lambda reader: aggregation(reader=reader, account_id=account_id, request=request),
        )
        times.append(time.perf_counter() - started)
    return statistics.median(times), answer


# DuckDB alone: the same cases as hand-written SQL over the segment files.
RAW_WHERE = {
    "no query": "TRUE",
    "rare word": "line_folded LIKE '%quarantined%'",
    "level+app": "level_folded = 'error' AND app_folded >= 'web' AND app_folded < 'wec'",
    "meta field": "meta_folded LIKE '%econnreset%' AND meta_folded LIKE '%code\"%'",
    "phrase": "line_folded LIKE '%connection reset by peer%'",
    "common word": "line_folded LIKE '%request%'",
}


def raw_aggregation(connection: Any, source: str, case: Case, expected: Expected) -> None:
    """The aggregation as DuckDB statements over ``source`` alone: the histogram of 60
    buckets and the top 10 hosts, apps and levels."""
    where = RAW_WHERE[case.name]
    width = max(1, (expected.last_ms - expected.first_ms) // 60)
    connection.execute(
        f"SELECT ts // {width}, count(*) FROM {source} WHERE {where} GROUP BY 1"
    ).fetchall()
    for column in ("host_folded", "app_folded", "level_folded"):
        connection.execute(
            f"SELECT {column}, count(*) c FROM {source} WHERE {where} AND {column} IS NOT NULL "
            "GROUP BY 1 ORDER BY c DESC, 1 LIMIT 10"
        ).fetchall()


def raw_duckdb(files: list[str], case: Case, expected: Expected) -> tuple[float, float, int]:
    """(aggregation s, all matches s, rows) of DuckDB alone, median of RUNS."""
    connection = duckdb.connect(config={"threads": 1})
    where = RAW_WHERE[case.name]
    source = relation(files)
    aggregate_times, walk_times = [], []
    rows = 0
    for _ in range(RUNS):
        started = time.perf_counter()
        raw_aggregation(connection, source, case, expected)
        aggregate_times.append(time.perf_counter() - started)
        started = time.perf_counter()
        result = connection.execute(
            "SELECT id, ts, host, app, level, env, file, ip, mac, tags, meta, line "
            f"FROM {source} WHERE {where} ORDER BY ts, id"
        )
        rows = 0
        while batch := result.fetchmany(10_000):
            rows += len(batch)
        walk_times.append(time.perf_counter() - started)
    return statistics.median(aggregate_times), statistics.median(walk_times), rows


def directory_bytes(root: Path) -> int:
    return sum(path.stat().st_size for path in root.rglob("*") if path.is_file())


async def measure(
    target: Target, expected: Expected, segment_dir: Path, label: str
) -> tuple[dict[str, tuple[float, float, float, int]], list[str]]:
    assert target.loaded is not None
    account_id = target.loaded.account_id
    db = Database.connect(target.url)
    db.segment_dir = segment_dir
    sealer = Sealer(b"b" * 32)
    ids = target.ids()
    problems: list[str] = []
    results: dict[str, tuple[float, float, float, int]] = {}
    try:
        for case in CASES:
            first = await first_page_s(db, sealer, account_id, case, expected)
            walk_s, got = await walk(db, sealer, account_id, case, expected)
            selected = expected.selected[case.name]
            want = sorted(ids[index] for index in range(len(selected)) if selected[index])
            if len(got) != len(set(got)) or sorted(got) != want:
                problems.append(f"MISMATCH {target.backend} {label} {case.name}: walk")
            agg_s, answer = await aggregate_s(db, account_id, case, expected)
            # The row store's aggregation is capped (exact: false past 200,000
            # candidates); the segments' never is.
            capped = label == "row store" and not answer.exact
            if (answer.total != len(want) and not capped) or (not answer.exact and not capped):
                problems.append(
                    f"MISMATCH {target.backend} {label} {case.name}: aggregate "
                    f"{answer.total} (exact {answer.exact}) for {len(want)}"
                )
            results[case.name] = (first, walk_s, agg_s, len(want))
            print(
                f"{target.backend} {label:9} {case.name:12} first {first * 1000:7.0f} ms  "
                f"walk {walk_s:7.2f} s  aggregate {agg_s * 1000:7.0f} ms  {len(want):>9,}"
                + ("" if answer.exact else f"  (aggregate capped: {answer.total:,} counted)"),
                flush=True,
            )
    finally:
        await db.dispose()
    return results, problems


async def compact_all(target: Target, segment_dir: Path) -> tuple[float, int]:
    db = Database.connect(target.url)
    config = CompactorConfig(
        root=segment_dir,
        after_ms=0,
        window_ms=86_400_000,
        max_lines=100_000,
        lease_ms=600_000,
    )
    moved = 0
    started = time.perf_counter()
    try:
        while True:
            result = await compact_round(db, config, owner="bench")
            moved += result.lines
            if not result.segments:
                break
    finally:
        await db.dispose()
    return time.perf_counter() - started, moved


async def run(args: argparse.Namespace, work: Path) -> int:
    targets: list[Target] = []
    for backend in args.backends:
        kind = SqliteTarget if backend == "sqlite" else PostgresTarget
        targets.append(kind(dataset=None, work=work))
    expected = await load(targets, seed=args.seed, lines=args.lines)
    problems: list[str] = []
    for target in targets:
        segment_dir = work / f"segments-{target.backend}"
        size = await target.size()
        hot, found = await measure(target, expected, segment_dir, "row store")
        problems += found
        move_s, moved = await compact_all(target, segment_dir)
        print(
            f"{target.backend}: compacted {moved:,} lines in {move_s:.1f} s "
            f"({moved / move_s:,.0f} lines/s)",
            flush=True,
        )
        cold, found = await measure(target, expected, segment_dir, "segments")
        problems += found
        files = [str(path) for path in sorted(segment_dir.rglob("*.parquet"))]
        assert target.loaded is not None
        account_files = [path for path in files if target.loaded.account_id in path]
        per_million = 1_000_000 / target.loaded.lines
        segment_mb = directory_bytes(segment_dir) / 1e6 * per_million
        print(
            f"\n{target.backend}: disk per million lines (all accounts): row store "
            f"{size.total / 1e6 * per_million:,.0f} MB, segments {segment_mb:,.0f} MB "
            f"({len(files)} files)"
        )
        print(
            "| case | matches | first page ms (rows / segs) | all matches s (rows / segs / duckdb) "
            "| hist+top ms (rows / segs / duckdb) | segs / duckdb (all, agg) |"
        )
        print("|---|---:|---|---|---|---|")
        for case in CASES:
            raw_agg, raw_walk, raw_rows = raw_duckdb(account_files, case, expected)
            h, c = hot[case.name], cold[case.name]
            print(
                f"| {case.name} | {h[3]:,} | {h[0] * 1000:,.0f} / {c[0] * 1000:,.0f} "
                f"| {h[1]:.2f} / {c[1]:.2f} / {raw_walk:.2f} ({raw_rows:,}) "
                f"| {h[2] * 1000:,.0f} / {c[2] * 1000:,.0f} / {raw_agg * 1000:,.0f} "
                f"| {c[1] / raw_walk:.1f}x, {c[2] / raw_agg:.1f}x |",
                flush=True,
            )
        await target.drop()
    for problem in problems:
        print(problem)
    return 1 if problems else 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lines", type=parse_count, default=1_000_000)
    parser.add_argument("--backends", default="sqlite", type=lambda text: text.split(","))
    parser.add_argument("--seed", type=int, default=8)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tidegate-bench-segments-"))
    try:
        return asyncio.run(run(args, work))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

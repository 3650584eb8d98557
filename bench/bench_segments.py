"""The log store with and without segments, and DuckDB alone on the same Parquet.

``python bench/bench_segments.py --lines 1m [--backends sqlite,postgres]
[--index-block-lines N]``

(``--index-block-lines``: the compactor builds the segment index in blocks of N lines
instead of a block per row group: docs/log-store.md, "A finer index: measured".)

Loads the search data set (``search_dataset.py``: one measured account's lines over 7
days plus 5% of three other accounts', the six cases of issue 19) through the store's
write path into a scratch database, then for each case, in process through the same
code the server runs (``run_off_loop``, the export and aggregation services, their
worker threads; no HTTP):

- the first page (``/v2/export``'s, 10,000 lines, oldest first), the walk of all
  matches (pages of 10,000 to the end) and the aggregation (histogram of 60 buckets and
  the top 10 hosts, apps and levels);
- first with every line in the row store, then after the compactor moved them all into
  segments (the time and lines/s of the move are printed), then, for the cases with a
  literal, with the segments' index removed (``trigram_filters`` null, as a segment
  written before it: every segment of the range read whole), then DuckDB alone over the
  same Parquet files with hand-written SQL (a floor: LIKE on the folded line or meta, no
  confirmation, so it may count a few near misses the matcher would reject).

Besides the search data set's six cases, three needles: a word, a meta value and a
phrase each held by one line, picked from the generated lines (a message id, a
``request_id``, an upload's file name), judged by the matcher on every line like the
others: what the segment index is for (the data set's rare word is in every row group).
For each case the rows of the segments' row groups an aggregation reads (the metric
``tidegate_segment_row_groups_total``), and the index's size and build time per million
lines, are printed.

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
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import duckdb
import pyarrow.parquet as pq
from prometheus_client import REGISTRY
from sqlalchemy import func, select, text, update

from bench_search import LOAD_BATCH, parse_count
from search_dataset import CASES, Case, Expected, generate
from search_stores import PostgresTarget, SqliteTarget, Target
from tidegate.aggregate.schemas import AggregateRequest
from tidegate.aggregate.service import aggregation
from tidegate.auth.secrets import Sealer
from tidegate.db.engine import Database
from tidegate.export.schemas import ExportRequest
from tidegate.export.service import page_of_lines
from tidegate.logs import segment_index
from tidegate.logs.compactor import CompactorConfig, compact_round
from tidegate.logs.filtering import parse_line_filter
from tidegate.logs.reading import PageReader, run_off_loop
from tidegate.logs.segments import ROW_GROUP_LINES, relation
from tidegate.models import LogSegment
from tidegate.search import LogLine, compile_query

PAGE = 10_000
RUNS = 3
# The cases a search literal makes the segment index matter for (measured without it too).
LITERAL_CASES = ("rare word", "meta field", "phrase", "common word")
NEEDLE_CASES = ("needle word", "needle meta", "needle phrase")


def pick_needles(seed: int, lines: int) -> tuple[Case, ...]:
    """Three literals each held by one line of the measured account, from past 60% of
    the data set: a message id (a word), a ``request_id`` (a meta value) and an upload's
    file name with the word after it (a phrase)."""
    found: dict[str, str] = {}
    seq = 0
    for batches in generate(seed=seed, lines=lines, batch=LOAD_BATCH):
        for line in (line for batch in batches if batch.account == 0 for line in batch.lines):
            seq += 1
            if seq < lines * 0.6:
                continue
            text = line.line
            if "needle meta" not in found and line.meta and "request_id" in line.meta:
                found["needle meta"] = f"request_id:{line.meta['request_id']}"
            if "needle word" not in found and text.startswith("message <"):
                found["needle word"] = text[len("message <") :].split("@")[0]
            if "needle phrase" not in found and text.startswith("upload "):
                found["needle phrase"] = '"' + " ".join(text.split()[1:3]) + '"'
            if len(found) == len(NEEDLE_CASES):
                return tuple(Case(name, found[name]) for name in NEEDLE_CASES)
    raise RuntimeError("the data set is too small for needles")


async def load(
    targets: list[Target], *, seed: int, lines: int, extra: tuple[Case, ...]
) -> Expected:
    """``bench_search.load``, judging the ``extra`` cases' queries on every line of the
    measured account too (by the matcher)."""
    expected = Expected.empty(lines)
    matchers = [(case.name, compile_query(case.query)) for case in extra if case.query]
    for case in extra:
        expected.selected[case.name] = bytearray(lines)
    for target in targets:
        await target.load_start()
    started = time.perf_counter()
    seq = 0
    for batches in generate(seed=seed, lines=lines, batch=LOAD_BATCH, expected=expected):
        for line in (line for batch in batches if batch.account == 0 for line in batch.lines):
            view = LogLine(
                line.line,
                host=line.host,
                app=line.app,
                level=line.level,
                file=line.file,
                meta=line.meta,
            )
            for name, query in matchers:
                if query.matches(view):
                    expected.selected[name][seq] = 1
            seq += 1
        for target in targets:
            await target.load_round(batches)
    for target in targets:
        await target.load_finish(lines)
    print(f"generated and loaded in {time.perf_counter() - started:.0f} s", flush=True)
    return expected


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


async def timed(run: Callable[[], Awaitable[Any]]) -> tuple[float, float, Any]:
    """(median wall s, median CPU s of this process, the last answer) of RUNS runs. The
    CPU is the read's own (the DuckDB and SQLite work run in this process; PostgreSQL's
    server is not counted), and moves less than the wall time with other load beside."""
    times, cpu = [], []
    answer = None
    for _ in range(RUNS):
        started, cpu_started = time.perf_counter(), time.process_time()
        answer = await run()
        times.append(time.perf_counter() - started)
        cpu.append(time.process_time() - cpu_started)
    return statistics.median(times), statistics.median(cpu), answer


async def first_page_s(
    db: Database, sealer: Sealer, account_id: str, case: Case, expected: Expected
) -> tuple[float, float]:
    """(wall s, CPU s) of the first page."""
    wall, cpu, _answer = await timed(
        lambda: on_reader(
            db,
            account_id,
            lambda reader: page_of_lines(
                reader=reader,
                sealer=sealer,
                account_id=account_id,
                request=export_request(case, expected, None),
            ),
        )
    )
    return wall, cpu


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
) -> tuple[float, float, Any]:
    """(wall s, CPU s, the answer) of the aggregation."""
    request = AggregateRequest(
        from_ms=expected.first_ms,
        to_ms=expected.last_ms,
        buckets=60,
        top=10,
        line_filter=parse_line_filter(hosts=None, apps=None, levels=None, query=case.query),
    )
    return await timed(
        lambda: on_reader(
            db,
            account_id,
            lambda reader: aggregation(reader=reader, account_id=account_id, request=request),
        )
    )


# DuckDB alone: the same cases as hand-written SQL over the segment files.
RAW_WHERE = {
    "no query": "TRUE",
    "rare word": "line_folded LIKE '%quarantined%'",
    "level+app": "level_folded = 'error' AND app_folded >= 'web' AND app_folded < 'wec'",
    "meta field": "meta_folded LIKE '%econnreset%' AND meta_folded LIKE '%code\"%'",
    "phrase": "line_folded LIKE '%connection reset by peer%'",
    "common word": "line_folded LIKE '%request%'",
}


def raw_where(case: Case) -> str:
    """The case as hand-written DuckDB SQL (a needle: LIKE on the folded line or meta)."""
    if case.name in RAW_WHERE:
        return RAW_WHERE[case.name]
    assert case.query is not None
    literal = case.query.removeprefix("request_id:").strip('"').casefold().replace("'", "''")
    column = "meta_folded" if case.name == "needle meta" else "line_folded"
    return f"{column} LIKE '%{literal}%'"


def raw_aggregation(connection: Any, source: str, case: Case, expected: Expected) -> None:
    """The aggregation as DuckDB statements over ``source`` alone: the histogram of 60
    buckets and the top 10 hosts, apps and levels."""
    where = raw_where(case)
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
    where = raw_where(case)
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


# (first page s, all matches s, aggregation s, matches, row groups read by an
# aggregation, row groups skipped by it, first page CPU s, aggregation CPU s)
Result = tuple[float, float, float, int, int, int, float, float]


def row_groups(outcome: str) -> int:
    """The row groups the segment index let this process's reads search or skip so far."""
    value = REGISTRY.get_sample_value("tidegate_segment_row_groups_total", {"outcome": outcome})
    return int(value or 0)


async def measure(
    target: Target,
    expected: Expected,
    segment_dir: Path,
    label: str,
    cases: tuple[Case, ...],
) -> tuple[dict[str, Result], list[str]]:
    assert target.loaded is not None
    account_id = target.loaded.account_id
    db = Database.connect(target.url)
    db.segment_dir = segment_dir
    sealer = Sealer(b"b" * 32)
    ids = target.ids()
    problems: list[str] = []
    results: dict[str, Result] = {}
    try:
        for case in cases:
            first, first_cpu = await first_page_s(db, sealer, account_id, case, expected)
            walk_s, got = await walk(db, sealer, account_id, case, expected)
            selected = expected.selected[case.name]
            want = sorted(ids[index] for index in range(len(selected)) if selected[index])
            if len(got) != len(set(got)) or sorted(got) != want:
                problems.append(f"MISMATCH {target.backend} {label} {case.name}: walk")
            searched, skipped = row_groups("searched"), row_groups("skipped")
            agg_s, agg_cpu, answer = await aggregate_s(db, account_id, case, expected)
            searched = (row_groups("searched") - searched) // RUNS
            skipped = (row_groups("skipped") - skipped) // RUNS
            # The row store's aggregation is capped (exact: false past 200,000
            # candidates); the segments' never is.
            capped = label == "row store" and not answer.exact
            if (answer.total != len(want) and not capped) or (not answer.exact and not capped):
                problems.append(
                    f"MISMATCH {target.backend} {label} {case.name}: aggregate "
                    f"{answer.total} (exact {answer.exact}) for {len(want)}"
                )
            results[case.name] = (
                first, walk_s, agg_s, len(want), searched, skipped, first_cpu, agg_cpu
            )  # fmt: skip
            print(
                f"{target.backend} {label:9} {case.name:13} first {first * 1000:7.0f} ms "
                f"({first_cpu * 1000:5.0f} CPU)  walk {walk_s:7.2f} s  aggregate "
                f"{agg_s * 1000:7.0f} ms ({agg_cpu * 1000:5.0f} CPU)  {len(want):>9,}"
                + ("" if answer.exact else f"  (aggregate capped: {answer.total:,} counted)")
                + (
                    f"  index blocks kept {searched}/{searched + skipped}"
                    if searched + skipped
                    else ""
                ),
                flush=True,
            )
    finally:
        await db.dispose()
    return results, problems


async def index_bytes(target: Target) -> tuple[int, int, int]:
    """(the indexes' bytes, the segment files' bytes, the segments) of every account."""
    db = Database.connect(target.url)
    try:
        async with db.read_sessions() as session:
            row = (
                await session.execute(
                    select(
                        func.coalesce(func.sum(func.length(LogSegment.trigram_filters)), 0),
                        func.coalesce(func.sum(LogSegment.bytes), 0),
                        func.count(),
                    )
                )
            ).one()
        return int(row[0]), int(row[1]), int(row[2])
    finally:
        await db.dispose()


async def set_indexes(
    target: Target, indexes: dict[int, bytes | None] | None
) -> dict[int, bytes | None]:
    """Every segment's index as ``indexes`` (by registry id; None: every segment as one
    written before the index, read whole); the indexes there were."""
    db = Database.connect(target.url)
    try:
        async with db.write_sessions() as session:
            rows = await session.execute(select(LogSegment.id, LogSegment.trigram_filters))
            before = {int(segment_id): data for segment_id, data in rows}
            for segment_id in before:
                await session.execute(
                    update(LogSegment)
                    .where(LogSegment.id == segment_id)
                    .values(trigram_filters=None if indexes is None else indexes[segment_id])
                )
            await session.commit()
    finally:
        await db.dispose()
    segment_index.INDEXES.clear()
    return before


async def settle_search_index(target: Target) -> float:
    """SQLite: merge the FTS5 index's segments (``optimize``), as the row store's own
    writes do over time. The compactor's deletes leave every moved line's entries in it
    as delete markers until merges drop them, and counting a literal's candidates
    (``filter_plan``) reads them: up to seconds for a literal of common trigrams at a
    million moved lines, a few milliseconds merged. The seconds it took."""
    if target.backend != "sqlite":
        return 0.0
    started = time.perf_counter()
    db = Database.connect(target.url)
    try:
        async with db.write_sessions() as session:
            await session.execute(text("INSERT INTO log_search(log_search) VALUES ('optimize')"))
            await session.commit()
    finally:
        await db.dispose()
    return time.perf_counter() - started


def index_build_s(files: list[str], block_lines: int) -> tuple[float, int]:
    """The CPU the index of the files takes to build (``segment_index.build`` over their
    columns, as the compactor calls it), and the lines."""
    cpu, lines = 0.0, 0
    for path in files:
        table = pq.read_table(path, columns=["ts", "line", "meta", "line_folded", "meta_folded"])
        columns = {name: table.column(name).to_pylist() for name in table.column_names}
        started = time.thread_time()
        segment_index.build(columns, block_lines=block_lines)
        cpu += time.thread_time() - started
        lines += table.num_rows
    return cpu, lines


async def compact_all(
    target: Target, segment_dir: Path, index_block_lines: int | None
) -> tuple[float, float, int]:
    """(wall s, this process's CPU s, lines moved) of moving every line into segments
    (the database server's own CPU, PostgreSQL's, is not counted)."""
    db = Database.connect(target.url)
    config = CompactorConfig(
        root=segment_dir,
        after_ms=0,
        window_ms=86_400_000,
        max_lines=100_000,
        lease_ms=600_000,
        index_block_lines=index_block_lines,
    )
    moved = 0
    started = time.perf_counter()
    cpu_started = time.process_time()
    try:
        while True:
            result = await compact_round(db, config, owner="bench")
            moved += result.lines
            if not result.segments:
                break
    finally:
        await db.dispose()
    return time.perf_counter() - started, time.process_time() - cpu_started, moved


async def run(args: argparse.Namespace, work: Path) -> int:
    targets: list[Target] = []
    for backend in args.backends:
        kind = SqliteTarget if backend == "sqlite" else PostgresTarget
        targets.append(kind(dataset=None, work=work))
    needles = pick_needles(args.seed, args.lines)
    for case in needles:
        print(f"{case.name}: {case.query}")
    cases = (*CASES, *needles)
    expected = await load(targets, seed=args.seed, lines=args.lines, extra=needles)
    problems: list[str] = []
    for target in targets:
        segment_dir = work / f"segments-{target.backend}"
        size = await target.size()
        hot, found = await measure(target, expected, segment_dir, "row store", cases)
        problems += found
        move_s, move_cpu, moved = await compact_all(target, segment_dir, args.index_block_lines)
        print(
            f"{target.backend}: compacted {moved:,} lines in {move_s:.1f} s "
            f"({moved / move_s:,.0f} lines/s; {move_cpu / moved * 1e6:,.1f} s of this "
            "process's CPU per million lines)",
            flush=True,
        )
        print(
            f"{target.backend}: the row store's search index merged in "
            f"{await settle_search_index(target):.1f} s",
            flush=True,
        )
        # Each case from the segments with their index, then (a case with a literal)
        # without it, one after the other: the machine's load drifts less between them.
        cold: dict[str, Result] = {}
        whole: dict[str, Result] = {}
        for case in cases:
            found_cold, found = await measure(target, expected, segment_dir, "segments", (case,))
            cold.update(found_cold)
            problems += found
            if case.name in LITERAL_CASES + NEEDLE_CASES:
                saved = await set_indexes(target, None)
                found_whole, found = await measure(
                    target, expected, segment_dir, "no index", (case,)
                )
                whole.update(found_whole)
                problems += found
                await set_indexes(target, saved)
        indexed, segment_bytes, segment_count = await index_bytes(target)
        files = [str(path) for path in sorted(segment_dir.rglob("*.parquet"))]
        build_cpu, build_lines = index_build_s(files, args.index_block_lines or ROW_GROUP_LINES)
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
            f"{target.backend}: segment index {indexed / 1e6 * per_million:,.2f} MB per million "
            f"lines ({indexed / max(1, segment_bytes):.1%} of the segments' bytes; "
            f"{indexed / segment_count / 1e3:,.0f} KB a segment of up to 100,000 lines); "
            f"built in {build_cpu / build_lines * 1e6:,.1f} s of CPU per million lines"
        )
        print(
            "| case | matches | first page ms, CPU ms in brackets (rows / segs / segs no index) "
            "| all matches s (rows / segs / segs no index / duckdb) "
            "| hist+top ms, CPU ms in brackets (rows / segs / segs no index / duckdb) "
            "| index blocks kept |"
        )
        print("|---|---:|---|---|---|---:|")
        for case in cases:
            raw_agg, raw_walk, raw_rows = raw_duckdb(account_files, case, expected)
            h, c = hot[case.name], cold[case.name]
            tiers = [h, c, *([whole[case.name]] if case.name in whole else [])]
            first = " / ".join(f"{r[0] * 1000:,.0f} ({r[6] * 1000:,.0f})" for r in tiers)
            walks = " / ".join(f"{r[1]:.2f}" for r in tiers)
            aggregates = " / ".join(f"{r[2] * 1000:,.0f} ({r[7] * 1000:,.0f})" for r in tiers)
            rows_note = f" ({raw_rows:,})" if raw_rows != h[3] else ""
            read = f"{c[4]:,} of {c[4] + c[5]:,}" if c[4] + c[5] else "all"
            print(
                f"| {case.name} | {h[3]:,} | {first} | {walks} / {raw_walk:.2f}{rows_note} "
                f"| {aggregates} / {raw_agg * 1000:,.0f} | {read} |",
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
    # Lines per block of the segment index (default: a block per row group, 16,384).
    parser.add_argument("--index-block-lines", type=int, default=None)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tidegate-bench-segments-"))
    try:
        return asyncio.run(run(args, work))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

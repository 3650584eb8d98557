"""Benchmark: PostgreSQL's plans for the search cases, before and after the partitions
tidegate fills are analyzed.

    python bench/bench_pg_plans.py [--lines 300k] [--seed 8] [--keep] [--runs 3]

Loads ``bench_search``'s data set (``search_dataset.py``: ``--lines`` lines of one
account over 7 days, 8 daily partitions, plus 5% of three other accounts) into a fresh
PostgreSQL database through the store's own write path (``store_lines``, a transaction
per 10,000-line batch), which analyzes nothing: the state a server is in when
autovacuum is off (as on this project's machine) or has not come round yet. Then, against
a real ``tidegate serve`` (one worker) over HTTP, over the whole range with
``prefer=head``, for each case of ``bench_search.py`` (no query, a rare word, a common
word, ``level:error app:web``, a ``meta.`` field, a phrase):

- first page: ``GET /v2/export`` at its default size (10,000 lines), median of ``--runs``;
- aggregation: ``GET /v1/aggregate`` with ``buckets=60&top=10`` (what a log view asks
  for), median of ``--runs``; its ``total`` must not change with the statistics;
- the plan PostgreSQL chooses for the page's scan and for the aggregation's histogram
  (``EXPLAIN`` of the statements tidegate runs, their values inlined as the server's
  custom plans have them), as a shape: node types and index names, one partition's
  subplan standing for the others (``8 x``).

Measured twice: unanalyzed, then after ``ANALYZE`` of each partition (what tidegate's
line writer does by itself, ``tidegate.logs.analyze``). Printed as one table, with the
ratio analyzed / unanalyzed; a case slower analyzed (past a 1.5x margin and 20 ms, for
noise) is marked ``WORSE``.

``--keep`` keeps the unanalyzed load as a template database (keyed by seed, size, the
generator's code and the schema) and measures a copy of it, so a run after the first
skips the load.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import orjson
from sqlalchemy import Select
from sqlalchemy.dialects import postgresql

from bench_search import LOAD_BATCH, PAGE, parse_count
from harness import PG_ADMIN, Server, create_pg_database, drop_pg_database, server_env
from search_aggregate import BUCKETS, TOP
from search_dataset import CASES, END_MS, START_MS, Case, generate, generator_key
from search_stores import PostgresTarget, schema_key
from tidegate.aggregate import repository as aggregate_repository
from tidegate.aggregate.service import FIRST_CHUNK, bucket_width
from tidegate.logs import read_queries
from tidegate.logs.filtering import parse_line_filter
from tidegate.logs.sql_filter import translate

_PG = postgresql.dialect()
# A case is WORSE analyzed past both: slower by this factor and by this many seconds.
WORSE_RATIO = 1.5
WORSE_S = 0.020


class UnanalyzedTarget(PostgresTarget):
    """bench_search's PostgreSQL target, left as the store leaves it: no ANALYZE."""

    async def _after_load(self) -> None:
        pass


@dataclass
class Measured:
    first_page_s: float
    aggregate_s: float
    total: int
    exact: bool
    scan_plan: str
    aggregate_plan: str


def inline(statement: Select[Any]) -> str:
    """The statement as the server's custom plan sees it: values inlined."""
    return str(statement.compile(dialect=_PG, compile_kwargs={"literal_binds": True}))


def statements(case: Case, account_id: str, max_id: int) -> tuple[str, str]:
    """The first statement of the first page's scan and the aggregation's histogram
    query (or the first statement of its walk along the candidates the matcher
    confirms) of ``case``, as the export and the aggregation build them
    (tidegate.export.service, tidegate.aggregate.service): a walk's later statements
    differ only in where they start and how many rows they ask for."""
    line_filter = parse_line_filter(
        hosts=None, apps=None, levels=None, query=case.query, account_id=account_id
    )
    sql = translate(line_filter, dialect="postgresql")
    scan = read_queries.scan_lines(
        account_id=account_id,
        from_ms=START_MS,
        to_ms=END_MS,
        max_id=max_id,
        after=None,
        newest_first=False,
        # Exact: the page and one more; confirmed by the matcher: the first chunk.
        limit=PAGE + 1,
        where=sql.where,
    )
    width = bucket_width(START_MS, END_MS, BUCKETS)
    if sql.where is None:
        histogram: Select[Any] = aggregate_repository.counts_per_bucket(
            account_id=account_id,
            from_ms=START_MS,
            to_ms=END_MS,
            max_id=max_id,
            first_ms=START_MS // width * width,
            width_ms=width,
        )
    elif sql.exact:
        histogram = aggregate_repository.bucket_counts(
            account_id=account_id,
            from_ms=START_MS,
            to_ms=END_MS,
            max_id=max_id,
            where=sql.where,
            width_ms=width,
        )
    else:  # confirmed by the matcher: the candidates newest first, the first chunk
        histogram = read_queries.scan_lines(
            account_id=account_id,
            from_ms=START_MS,
            to_ms=END_MS,
            max_id=max_id,
            after=None,
            newest_first=True,
            limit=FIRST_CHUNK,
            where=sql.where,
        )
    return inline(scan), inline(histogram)


def plan_shape(plan: dict[str, Any]) -> str:
    """A plan as ``Node(index) > child``; the children of an Append are grouped by
    shape, ``8 x ...`` for eight partitions planned alike."""
    name = plan["Node Type"]
    if plan.get("Strategy") in ("Hashed", "Sorted", "Mixed"):
        name = f"{plan['Strategy']} {name}"
    index = plan.get("Index Name")
    if index:
        name += f"({_unpartitioned(index)})"
    children = [plan_shape(child) for child in plan.get("Plans", [])]
    if not children:
        return name
    if plan["Node Type"] in ("Append", "Merge Append") and len(children) > 1:
        counted: dict[str, int] = {}
        for child in children:
            counted[child] = counted.get(child, 0) + 1
        inner = " | ".join(f"{count} x {shape}" for shape, count in counted.items())
        return f"{name} [{inner}]"
    return (
        f"{name} > {' > '.join(children)}"
        if len(children) == 1
        else (f"{name} [{' ; '.join(children)}]")
    )


def _unpartitioned(index: str) -> str:
    """A partition's index named by what it indexes (``log_lines_d20251116_..._idx``)."""
    if index.startswith("log_lines_d") and len(index) > 20:
        return "part:" + index[20:].removesuffix("_idx")
    return index


async def explain(connection: asyncpg.Connection, sql: str) -> str:
    (raw,) = await connection.fetchrow(f"EXPLAIN (FORMAT JSON) {sql}")
    return plan_shape(orjson.loads(raw)[0]["Plan"])


def timed(http: httpx.Client, path: str, params: dict[str, Any], runs: int) -> tuple[float, Any]:
    times = []
    body: Any = None
    for _ in range(runs):
        started = time.perf_counter()
        response = http.get(path, params=params)
        times.append(time.perf_counter() - started)
        if response.status_code != 200:
            raise RuntimeError(f"{path}: {response.status_code} {response.text[:300]}")
        body = response.content
    return statistics.median(times), orjson.loads(body)


async def measure_state(
    *, url: str, database: str, token: str, account_id: str, work: Path, runs: int
) -> dict[str, Measured]:
    env = server_env(url, work)
    headers = {"Authorization": f"Token {token}", "x-delegate-account-id": account_id}
    connection = await asyncpg.connect(f"postgresql://postgres@127.0.0.1:5432/{database}")
    server = Server(env, "--log-level", "warning", output=None)
    results: dict[str, Measured] = {}
    try:
        max_id = await connection.fetchval(
            "SELECT max(id) FROM log_lines WHERE account_id = $1", account_id
        )
        with httpx.Client(base_url=server.base, headers=headers, timeout=600) as http:
            for case in CASES:
                params: dict[str, Any] = {"from": START_MS, "to": END_MS, "prefer": "head"}
                if case.query is not None:
                    params["query"] = case.query
                first, _ = timed(http, "/v2/export", params, runs)
                aggregate_params = {**params, "buckets": BUCKETS, "top": TOP}
                aggregate_params.pop("prefer")
                aggregated, answer = timed(http, "/v1/aggregate", aggregate_params, runs)
                scan_sql, histogram_sql = statements(case, account_id, int(max_id))
                results[case.name] = Measured(
                    first,
                    aggregated,
                    int(answer["total"]),
                    bool(answer["exact"]),
                    await explain(connection, scan_sql),
                    await explain(connection, histogram_sql),
                )
                print(f"  {case.name}: page {first * 1000:,.0f} ms, aggregate "
                      f"{aggregated * 1000:,.0f} ms", flush=True)  # fmt: skip
    finally:
        server.stop()
        await connection.close()
    return results


async def analyze_partitions(database: str) -> float:
    """ANALYZE each partition of log_lines, as the line writer does; seconds taken."""
    connection = await asyncpg.connect(f"postgresql://postgres@127.0.0.1:5432/{database}")
    try:
        names = [
            row[0]
            for row in await connection.fetch(
                "SELECT relid::regclass::text FROM pg_partition_tree('log_lines') WHERE isleaf"
            )
        ]
        started = time.perf_counter()
        for name in names:
            await connection.execute(f"ANALYZE {name}")
        return time.perf_counter() - started
    finally:
        await connection.close()


async def prepared(args: argparse.Namespace, work: Path) -> tuple[str, str, str]:
    """A database holding the unanalyzed load (a copy of the kept template with
    ``--keep``): ``(name, token, account_id)``."""
    template = f"tidegate_bench_plans_s{args.seed}_n{args.lines}_{generator_key()}_{schema_key()}"
    manifest = args.cache_dir / f"{template}.json"
    admin = await asyncpg.connect(PG_ADMIN)
    try:
        kept = await admin.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", template)
    finally:
        await admin.close()
    if not (args.keep and kept and manifest.exists()):
        target = UnanalyzedTarget(dataset=None, work=work)
        await target.load_start()
        for batches in generate(seed=args.seed, lines=args.lines, batch=LOAD_BATCH):
            await target.load_round(batches)
        await target.load_finish(args.lines)
        assert target.loaded is not None
        rate = target.loaded.lines / target.loaded.load_s
        print(
            f"{target.loaded.lines:,} lines loaded through store_lines in "
            f"{target.loaded.load_s:.0f} s ({rate:,.0f} lines/s)",
            flush=True,
        )
        if not args.keep:
            return target.name, target.loaded.token, target.loaded.account_id
        await drop_pg_database(template)
        admin = await asyncpg.connect(PG_ADMIN)
        try:
            await admin.execute(f'ALTER DATABASE "{target.name}" RENAME TO "{template}"')
        finally:
            await admin.close()
        args.cache_dir.mkdir(parents=True, exist_ok=True)
        manifest.write_bytes(
            orjson.dumps({"token": target.loaded.token, "account_id": target.loaded.account_id})
        )
    else:
        print(f"copying the kept load {template}", flush=True)
    saved = orjson.loads(manifest.read_bytes())
    name = f"tidegate_bench_plans_{os.getpid()}"
    await drop_pg_database(name)
    await create_pg_database(name, template=template)
    return name, saved["token"], saved["account_id"]


def report(before: dict[str, Measured], after: dict[str, Measured]) -> list[str]:
    """The table; returns the cases slower analyzed."""
    worse: list[str] = []
    print(
        "\n| case        | page ms unanalyzed | page ms analyzed | ratio "
        "| aggregate ms unanalyzed | aggregate ms analyzed | ratio |     total | exact |"
    )
    for case in CASES:
        old, new = before[case.name], after[case.name]
        marks = []
        for what, was, now in (
            ("page", old.first_page_s, new.first_page_s),
            ("aggregate", old.aggregate_s, new.aggregate_s),
        ):
            if now > was * WORSE_RATIO and now - was > WORSE_S:
                marks.append(f"WORSE {what}")
                worse.append(f"{case.name} {what}")
        if (old.total, old.exact) != (new.total, new.exact):
            marks.append(f"TOTAL CHANGED from {old.total:,} ({old.exact})")
            worse.append(f"{case.name} total")
        print(
            f"| {case.name:<11} | {old.first_page_s * 1000:>18,.0f} | "
            f"{new.first_page_s * 1000:>16,.0f} | {new.first_page_s / old.first_page_s:>5.2f} | "
            f"{old.aggregate_s * 1000:>23,.0f} | {new.aggregate_s * 1000:>21,.0f} | "
            f"{new.aggregate_s / old.aggregate_s:>5.2f} | {new.total:>9,} | {new.exact!s:>5} |"
            f" {' '.join(marks)}".rstrip(" |")
            + (" |" if not marks else "")
        )
    print("\nplans (first page's scan; aggregation's histogram or candidate walk):")
    for case in CASES:
        old, new = before[case.name], after[case.name]
        print(f"{case.name}:")
        print(f"  page      unanalyzed: {old.scan_plan}")
        print(f"  page      analyzed:   {new.scan_plan}")
        print(f"  aggregate unanalyzed: {old.aggregate_plan}")
        print(f"  aggregate analyzed:   {new.aggregate_plan}")
    return worse


async def run(args: argparse.Namespace, work: Path) -> int:
    name, token, account_id = await prepared(args, work)
    url = f"postgresql+asyncpg://postgres@127.0.0.1:5432/{name}"
    try:
        print("unanalyzed:", flush=True)
        before = await measure_state(
            url=url, database=name, token=token, account_id=account_id, work=work, runs=args.runs
        )
        seconds = await analyze_partitions(name)
        print(f"ANALYZE of every partition: {seconds:.1f} s\nanalyzed:", flush=True)
        after = await measure_state(
            url=url, database=name, token=token, account_id=account_id, work=work, runs=args.runs
        )
    finally:
        await drop_pg_database(name)
    print(
        f"\n{args.lines:,} lines in the measured account, seed {args.seed}, median of "
        f"{args.runs}; load average {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)"
    )
    worse = report(before, after)
    if worse:
        print(f"\nslower analyzed: {', '.join(worse)}")
        return 1
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lines", type=parse_count, default=300_000, help="300k, 1m, ...")
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the unanalyzed load")
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
        / "tidegate-bench"
        / "plans",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tidegate-bench-plans-") as work:
        return asyncio.run(run(args, Path(work)))


if __name__ == "__main__":
    sys.exit(main())

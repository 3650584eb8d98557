"""Benchmark: search over a realistic log store, SQLite and PostgreSQL side by side.

    python bench/bench_search.py [--lines 1m] [--backends sqlite,postgres] [--keep]
                                 [--load-only] [--seed 8] [--cache-dir DIR]

Generates a seeded data set (``search_dataset.py``: ``--lines`` lines of one account over
7 days, plus 5% more lines of three other accounts), loads it through the store's own
write path in process (``store_lines``, a transaction per 10,000-line batch; no HTTP,
which is bench_ingest's job) and reports the load rate. Then, against a real
``tidegate serve`` (one worker) over HTTP, for each case (no query, a rare word,
``level:error app:web``, a ``meta.`` field, a phrase, a common word), over the whole
time range with ``prefer=head``:

- first page: ``GET /v2/export`` without ``size`` (the default, 10,000), median of 3;
- full walk: pages of ``size=10000`` (the export's maximum), following
  ``pagination_id`` to the end; the time is the sum of the requests (sent to body
  read), so the client's decoding and checking between pages is not counted; the
  server's CPU seconds over the walk;
- floor: the same case as hand-written SQL over the same tables through the raw driver
  (stdlib sqlite3, asyncpg), first 10,000 rows and all rows (``search_stores.py``);
- correctness: the ids a walk returned must be exactly those of the lines the Python
  matcher (``compile_query(...).matches``) selected while generating, each once, each
  the line it should be (its ``meta.request_id``); anything else is printed and the
  exit status is 1;
- aggregation: ``GET /v1/aggregate`` (histogram and top values) over the same range and
  query, median of 3, its counts checked against the walk's lines
  (``search_aggregate.py``); skipped when the server has no such endpoint.

Then the size on disk per million lines (all accounts' lines) and the server's peak
memory (VmHWM) after the walks. ``--keep`` keeps each load under the cache directory
(keyed by seed, size and schema) and reuses it; without it everything is scratch.
Loading 1,000,000 lines into both backends takes about 5 minutes on the project's 2-core
VM, and a whole run at 200k about a minute.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import os
import statistics
import sys
import tempfile
import time
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson

from harness import Server, cpu_seconds, status_kb
from search_aggregate import BUCKETS, TOP, Aggregated, WalkedLines, measure_aggregation
from search_dataset import CASES, Case, Expected, generate
from search_stores import TARGETS, Floor, Target, dataset_dir

PAGE = 10_000  # the export's largest page, and its default size
LOAD_BATCH = 10_000
DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tidegate-bench"


@dataclass
class Walk:
    pages: int = 0
    seconds: float = 0.0
    cpu_s: float = 0.0
    returned: bytearray = field(default_factory=bytearray)
    foreign: int = 0  # ids that are no line of the account
    duplicates: int = 0
    wrong: int = 0  # records whose meta.request_id is another line's
    lines: WalkedLines = field(default_factory=WalkedLines)


@dataclass
class Row:
    backend: str
    case: Case
    matches: int
    first_page_s: float
    walk: Walk
    floor: Floor
    aggregated: Aggregated | None
    problems: list[str]


def parse_count(text: str) -> int:
    """``200k``, ``1m``, ``5m`` or a plain number."""
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1:].lower(), 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


def export_params(expected: Expected, case: Case) -> dict[str, Any]:
    params: dict[str, Any] = {"from": expected.first_ms, "to": expected.last_ms, "prefer": "head"}
    if case.query is not None:
        params["query"] = case.query
    return params


def first_page_s(http: httpx.Client, params: dict[str, Any]) -> float:
    times = []
    for _ in range(3):
        started = time.perf_counter()
        response = http.get("/v2/export", params=params)
        times.append(time.perf_counter() - started)
        if response.status_code != 200:
            raise RuntimeError(f"export: {response.status_code} {response.text[:300]}")
    return statistics.median(times)


def walk(http: httpx.Client, params: dict[str, Any], ids: array[int], pid: int) -> Walk:
    result = Walk(returned=bytearray(len(ids)))
    cursor: str | None = None
    cpu = cpu_seconds(pid)
    while True:
        page_params = {**params, "size": PAGE}
        if cursor:
            page_params["pagination_id"] = cursor
        started = time.perf_counter()
        response = http.get("/v2/export", params=page_params)
        result.seconds += time.perf_counter() - started
        result.pages += 1
        if response.status_code != 200:
            raise RuntimeError(f"export: {response.status_code} {response.text[:300]}")
        body = orjson.loads(response.content)
        for record in body["lines"]:
            line_id = int(record["_id"])
            seq = bisect.bisect_left(ids, line_id)
            if seq == len(ids) or ids[seq] != line_id:
                result.foreign += 1
                continue
            if result.returned[seq]:
                result.duplicates += 1
            result.returned[seq] = 1
            result.lines.add(record)
            request_id = (record.get("_meta") or {}).get("request_id")
            if request_id is not None and request_id != f"req_{seq:09d}":
                result.wrong += 1
        cursor = body["pagination_id"]
        if cursor is None:
            break
    result.cpu_s = cpu_seconds(pid) - cpu
    return result


def problems_of(walk_result: Walk, expected: bytearray) -> list[str]:
    problems = []
    if walk_result.returned != expected:
        missing = [
            seq
            for seq, (got, want) in enumerate(zip(walk_result.returned, expected, strict=True))
            if want and not got
        ]
        extra = [
            seq
            for seq, (got, want) in enumerate(zip(walk_result.returned, expected, strict=True))
            if got and not want
        ]
        problems.append(
            f"{len(missing)} missing (lines {missing[:5]}), {len(extra)} extra (lines {extra[:5]})"
        )
    if walk_result.foreign:
        problems.append(f"{walk_result.foreign} ids of no line of the account")
    if walk_result.duplicates:
        problems.append(f"{walk_result.duplicates} returned twice")
    if walk_result.wrong:
        problems.append(f"{walk_result.wrong} with another line's request_id")
    return problems


async def measure(target: Target, expected: Expected, work: Path) -> tuple[list[Row], list[str]]:
    assert target.loaded is not None
    env = {
        **os.environ,
        "TIDEGATE_DATABASE_URL": target.url,
        "TIDEGATE_DATA_DIR": str(work / f"var-{target.backend}"),
        "TIDEGATE_BOOTSTRAP": "0",
        "TIDEGATE_RATE_LIMIT_PER_MINUTE": "0",
        "TIDEGATE_SECRET_KEY": "bench",
    }
    ids = target.ids()
    headers = {
        "Authorization": f"Token {target.loaded.token}",
        "x-delegate-account-id": target.loaded.account_id,
    }
    rows: list[Row] = []
    notes: list[str] = []
    server = Server(env, "--log-level", "warning", output=None)
    try:
        with httpx.Client(base_url=server.base, headers=headers, timeout=600) as http:
            rss_before = status_kb(server.pid, "VmRSS")["VmRSS"]
            load_before = os.getloadavg()[0]
            for case in CASES:
                params = export_params(expected, case)
                first = first_page_s(http, params)
                walked = walk(http, params, ids, server.pid)
                floor = await target.floor(
                    case,
                    account_id=target.loaded.account_id,
                    from_ms=expected.first_ms,
                    to_ms=expected.last_ms,
                    page=PAGE,
                )
                aggregated = measure_aggregation(http, params, walked.lines, server.pid)
                walked.lines = WalkedLines()  # all checked: let the memory go
                problems = problems_of(walked, expected.selected[case.name])
                if aggregated is not None:
                    problems += [f"aggregate: {problem}" for problem in aggregated.problems]
                row = Row(
                    target.backend,
                    case,
                    expected.count(case),
                    first,
                    walked,
                    floor,
                    aggregated,
                    problems,
                )
                rows.append(row)
                print(format_row(row), flush=True)
                for problem in row.problems:
                    print(f"  MISMATCH {target.backend} {case.name}: {problem}", flush=True)
            memory = status_kb(server.pid, "VmHWM", "VmRSS")
        notes.append(
            f"load average (1 min, {os.cpu_count()} cores): {load_before:.1f} as the walks "
            f"began, {os.getloadavg()[0]:.1f} as they ended"
        )
        notes.append(
            f"server worker memory: VmRSS {rss_before / 1024:.0f} MB before the walks, "
            f"VmHWM {memory['VmHWM'] / 1024:.0f} MB after them"
        )
        size = await target.size()
        million = target.loaded.lines / 1_000_000
        parts = ", ".join(
            f"{name} {value / million / 2**20:.0f}" for name, value in size.parts.items()
        )
        notes.append(
            f"size on disk: {size.total / million / 2**20:.0f} MB per million lines "
            f"(of all accounts; {parts}) {size.note}".rstrip()
        )
    finally:
        server.stop()
    return rows, notes


HEADER = (
    "| backend  | case        |   matches | first page ms | walk s | pages | server CPU s "
    "| floor first ms | floor walk s | floor rows | walk / floor |"
)


AGGREGATE_HEADER = "| backend  | case        | aggregate ms | server CPU ms |     total | exact |"


def format_aggregate(row: Row) -> str:
    aggregated = row.aggregated
    assert aggregated is not None
    return (
        f"| {row.backend:<8} | {row.case.name:<11} | {aggregated.seconds * 1000:>12,.0f} "
        f"| {aggregated.cpu_s * 1000:>13,.0f} | {aggregated.total:>9,} | {aggregated.exact!s:>5} |"
    )


def format_row(row: Row) -> str:
    ratio = row.walk.seconds / row.floor.walk_s if row.floor.walk_s else float("inf")
    return (
        f"| {row.backend:<8} | {row.case.name:<11} | {row.matches:>9,} | {row.first_page_s * 1000:>13,.0f} "
        f"| {row.walk.seconds:>6.2f} | {row.walk.pages:>5} | {row.walk.cpu_s:>12.2f} "
        f"| {row.floor.first_page_s * 1000:>14,.0f} | {row.floor.walk_s:>12.2f} | {row.floor.rows:>10,} "
        f"| {ratio:>12.1f} |"
    )


async def load(targets: list[Target], *, seed: int, lines: int) -> Expected:
    """Generate the data set, feeding each target that needs it, and judge every line."""
    expected = Expected.empty(lines)
    for target in targets:
        await target.load_start()
    started = time.perf_counter()
    for batches in generate(seed=seed, lines=lines, batch=LOAD_BATCH, expected=expected):
        for target in targets:
            await target.load_round(batches)
    wall = time.perf_counter() - started
    for target in targets:
        await target.load_finish(lines)
    if targets:
        print(f"generated and loaded in {wall:.0f} s", flush=True)
    return expected


async def run(args: argparse.Namespace, work: Path) -> int:
    dataset = dataset_dir(args.cache_dir, args.seed, args.lines) if args.keep else None
    targets = [TARGETS[name](dataset=dataset, work=work) for name in args.backends]
    expected = Expected.load(dataset) if dataset is not None else None
    # The measured account's first batch, to check kept loads against.
    sample = next(generate(seed=args.seed, lines=args.lines, batch=LOAD_BATCH))[0]
    to_load = [target for target in targets if not await target.reuse(sample)]
    for target in targets:
        state = "loading" if target in to_load else f"reusing the load in {dataset}"
        print(f"{target.backend}: {state}", flush=True)
    rows: list[Row] = []
    notes: dict[str, list[str]] = {}
    try:
        if to_load or expected is None:
            expected = await load(to_load, seed=args.seed, lines=args.lines)
            if dataset is not None:
                expected.save(dataset)
        for target in targets:
            assert target.loaded is not None
            rate = target.loaded.lines / target.loaded.load_s
            print(
                f"{target.backend}: {target.loaded.lines:,} lines loaded through store_lines in "
                f"{target.loaded.load_s:.0f} s ({rate:,.0f} lines/s, generation excluded)",
                flush=True,
            )
        if args.load_only:
            return 0
        print(HEADER, flush=True)
        for target in targets:
            backend_rows, notes[target.backend] = await measure(target, expected, work)
            rows.extend(backend_rows)
    finally:
        for target in targets:
            await target.drop()
    print(f"\n{args.lines:,} lines in the measured account, seed {args.seed}")
    print(HEADER)
    for row in rows:
        print(format_row(row))
    aggregated = [row for row in rows if row.aggregated is not None]
    if aggregated:
        print(f"\nGET /v1/aggregate, whole range, buckets={BUCKETS} top={TOP}, median of 3")
        print(AGGREGATE_HEADER)
        for row in aggregated:
            print(format_aggregate(row))
    else:
        print("\nGET /v1/aggregate: the server has no such endpoint (not on main yet)")
    for backend, lines in notes.items():
        for note in lines:
            print(f"{backend}: {note}")
    failed = [row for row in rows if row.problems]
    if failed:
        print(
            f"\nMISMATCH in {len(failed)} walks: the export did not return what the matcher selects"
        )
        for row in failed:
            print(f"  {row.backend} {row.case.name}: {'; '.join(row.problems)}")
        return 1
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lines", type=parse_count, default=1_000_000, help="200k, 1m, 5m, ...")
    parser.add_argument("--backends", default="sqlite,postgres", type=lambda text: text.split(","))
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--keep", action="store_true", help="keep and reuse loads in --cache-dir")
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE / "search")
    parser.add_argument(
        "--load-only", action="store_true", help="with --keep: load (or check), measure nothing"
    )
    args = parser.parse_args()
    if args.load_only and not args.keep:
        parser.error("--load-only needs --keep")
    unknown = set(args.backends) - set(TARGETS)
    if unknown:
        parser.error(f"unknown backends: {', '.join(sorted(unknown))}")
    with tempfile.TemporaryDirectory(prefix="tidegate-bench-search-") as work:
        return asyncio.run(run(args, Path(work)))


if __name__ == "__main__":
    sys.exit(main())

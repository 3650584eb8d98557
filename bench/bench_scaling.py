"""Query cost as what is stored grows, on PostgreSQL with segments (issue 19's scaling
run; docs/log-store.md, "Scaling with what is stored").

``python bench/bench_scaling.py [--sizes 1m,5m,20m] [--hot 500k] [--needles 1000]``

One scratch PostgreSQL database (a name of its own, created and dropped here) grows
through the sizes (lines of the measured account; the three other accounts add 5%, as
in ``search_dataset.py``), so each size's build adds to the one before:

- **The row store**: the last week, ``--hot`` lines (at most half the smallest size),
  from ``search_dataset.generate`` through the store's write path (``store_lines``), as
  ``bench_search.py`` loads; the same at every size.
- **Segments**: older weeks of ``--hot`` lines each (the same density), as many as the
  size needs. The first older week is generated (another seed) and written by the
  compactor's own writer (``compactor.write_rows``: the Parquet file and its index),
  split as a move splits (an account's lines of one received day, at most 100,000 a
  file) and registered with the row a move inserts. The weeks before it are copies of
  a third generated week's files, each shifted by whole weeks (``ts``, ``received_ms``)
  and given ids of its own, written by ``segments.write_segment`` (the same layout) with
  the template's index, its row groups' ts spans shifted: generating and indexing 20M
  lines in Python (about 50 s of CPU a million) would not fit a working session. The
  text of those weeks repeats; what a read costs (files, row groups, bytes, index
  lookups, DuckDB's scans) is that of as many distinct lines.

**The needles** (constant at every size): a word and a meta value
(``trace:<value>``) planted on ``--needles`` lines (K) of the row store's last hour,
spread evenly, and on ``--old-needles`` lines of the first older week (in segments).
Searched over the last hour (K matches: the segments are outside the range) and over
all that is stored (K + old: every segment's index is looked at, the row groups
holding none skipped). Each must count exactly that, in its walk and its aggregation,
at every size (else MISMATCH, exit 1).

**Timed at each size**, through the code the server runs (the export and aggregation
services in their worker threads, in process, no HTTP): each needle's first page
(10,000 lines), the walk of all its matches (the export's pages to the end) and the
aggregation (histogram of 60 buckets + top 10 hosts, apps, levels), and the six cases of
``bench_segments.py`` over all that is stored (first page and aggregation; their
matches grow with the store, so their walks are left out: no query at 20M lines is a
20M-line walk; one run each by default, ``--case-runs``: the common word's aggregation
confirms every segment candidate, about a minute at 20M). Wall time (median of 3) and CPU: this process (DuckDB, the services) plus
the PostgreSQL backends of the database (``/proc``); the ratio of each to the smallest
size's.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import math
import shutil
import statistics
import struct
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import pyarrow.compute as pc
import pyarrow.parquet as pq
from prometheus_client import REGISTRY
from sqlalchemy import func, insert, select

from bench_search import LOAD_BATCH, parse_count
from harness import cpu_seconds
from search_dataset import CASES, DAY_MS, END_MS, Case, generate
from search_stores import PostgresTarget
from tidegate.aggregate.schemas import AggregateRequest
from tidegate.aggregate.service import aggregation
from tidegate.auth.secrets import Sealer
from tidegate.db.engine import Database
from tidegate.errors import ReadBudgetExceeded
from tidegate.export.schemas import ExportRequest
from tidegate.export.service import page_of_lines
from tidegate.logs import segment_index, store
from tidegate.logs.compactor import write_rows
from tidegate.logs.filtering import parse_line_filter
from tidegate.logs.reading import PageReader, run_off_loop
from tidegate.logs.segments import NAMES, segment_name, write_segment
from tidegate.logs.store import NewLine
from tidegate.models import Account, LogSegment

WEEK_MS = 7 * DAY_MS
HOUR_MS = 3_600_000
PAGE = 10_000
RUNS = 3
MAX_LINES = 100_000  # a segment's lines at most (the default segment_max_lines)
# The row store's ids start here (its sequence restarted); the older weeks' ids lie
# below, STRIDE a week, older weeks lower, as a store that received them earlier has.
HOT_FIRST_ID = 10**12
STRIDE = 10**8
NEEDLE_WORD = "zqneedlewx"
NEEDLE_META_KEY, NEEDLE_META_VALUE = "trace", "zqtracewx"
NEEDLES = (Case("needle word", NEEDLE_WORD), Case("needle meta", f"trace:{NEEDLE_META_VALUE}"))


def plant(line: NewLine) -> NewLine:
    """The line with the needle word appended and the needle meta value set."""
    meta = dict(line.meta or {})
    meta[NEEDLE_META_KEY] = NEEDLE_META_VALUE
    return dataclasses.replace(line, line=f"{line.line} {NEEDLE_WORD}", meta=meta, size_bytes=-1)


def chosen(count: int, wanted: int) -> Iterator[bool]:
    """For each of ``count`` items in turn, whether it is one of ``wanted`` of them spread
    evenly (exactly ``wanted`` are)."""
    if wanted > count:
        raise ValueError(f"{wanted} needles among {count} lines")
    for index in range(count):
        yield index * wanted // count != (index + 1) * wanted // count


def shift_index(data: bytes, delta_ms: int) -> bytes:
    """A segment index (``segment_index.build``'s format) with every block's ts span
    moved by ``delta_ms``; the filters as they are."""
    header = struct.Struct("<4sBBHI")
    block = struct.Struct("<Iqq")
    out = bytearray(data)
    _magic, _version, _hashes, filters, count = header.unpack_from(data)
    offset = header.size
    for _ in range(count):
        rows, min_ts, max_ts = block.unpack_from(data, offset)
        block.pack_into(out, offset, rows, min_ts + delta_ms, max_ts + delta_ms)
        sizes = struct.unpack_from(f"<{filters}I", data, offset + block.size)
        offset += block.size + 4 * filters + sum(sizes)
    if offset != len(data):
        raise ValueError("not a segment index")
    return bytes(out)


@dataclass
class SegmentRow:
    """A registry row of ``log_segments`` (as ``compactor._register`` inserts)."""

    account: int  # index into the accounts
    path: str
    window_ms: int
    lines: int
    file_bytes: int
    min_ts: int
    max_ts: int
    min_id: int
    max_id: int
    max_received_ms: int
    index: bytes


def compactor_row(row: tuple[Any, ...], line_id: int, shift_ms: int) -> tuple[Any, ...]:
    """A ``store.line_rows`` row as ``compactor.compactor_columns`` reads it on
    PostgreSQL (the JSON columns in the store's spelling, not jsonb's), moved by
    ``shift_ms``."""
    return (
        line_id, row[1] + shift_ms, row[2] + shift_ms, *row[3:13], row[17], *row[14:17],
        row[18], row[13],
    )  # fmt: skip


def write_week(
    root: Path,
    accounts: list[str],
    *,
    seed: int,
    lines: int,
    weeks_back: int,
    first_id: int,
    needles: int,
) -> list[SegmentRow]:
    """Generates a week of ``lines`` (and the other accounts' share), ``weeks_back``
    weeks before the data set's own, ids from ``first_id`` on in the order generated,
    ``needles`` of the measured account's lines planted (spread evenly), and writes it
    as the compactor would move it: per account and received day, files of at most
    ``MAX_LINES``, by ``compactor.write_rows``. The registry rows of the files."""
    shift = -weeks_back * WEEK_MS
    pick = chosen(lines, needles)
    groups: dict[tuple[int, int], list[tuple[Any, ...]]] = {}
    written: list[SegmentRow] = []
    next_id = first_id

    def flush(key: tuple[int, int]) -> None:
        rows = groups.pop(key)
        account, window = key
        first, last = rows[0][0], rows[-1][0]
        name = segment_name(accounts[account], window, first)
        received = max(row[2] for row in rows)
        size, (min_ts, max_ts), index = write_rows(root, name, rows, "postgresql")
        written.append(
            SegmentRow(
                account, name, window, len(rows), size, min_ts, max_ts, first, last, received,
                index,
            )
        )  # fmt: skip

    for batches in generate(seed=seed, lines=lines, batch=LOAD_BATCH):
        for batch in batches:
            items = batch.lines
            if batch.account == 0 and needles:
                items = [plant(line) if next(pick) else line for line in items]
            received = batch.received_ms + shift
            window = received // DAY_MS * DAY_MS
            for key in [key for key in groups if key[0] == batch.account and key[1] < window]:
                flush(key)
            rows = groups.setdefault((batch.account, window), [])
            for row in store.line_rows(accounts[batch.account], batch.received_ms, items):
                rows.append(compactor_row(row, next_id, shift))
                next_id += 1
                if len(rows) == MAX_LINES:
                    flush((batch.account, window))
                    rows = groups.setdefault((batch.account, window), [])
    for key in list(groups):
        if groups[key]:
            flush(key)
    return written


def copy_week(
    template_root: Path,
    root: Path,
    accounts: list[str],
    template: list[SegmentRow],
    *,
    weeks_back: int,
    id_shift: int,
) -> list[SegmentRow]:
    """The template week's files (``weeks_back`` 0, written by ``write_week``) as the
    week ``weeks_back`` weeks before the data set's, ids moved by ``id_shift``: each
    file read, its ``ts``, ``received_ms`` and ``id`` moved, written again by
    ``write_segment``; its index with the ts spans moved."""
    shift = -weeks_back * WEEK_MS
    copies = []
    for segment in template:
        table = pq.read_table(template_root / segment.path)
        columns: dict[str, Any] = {name: table.column(name) for name in NAMES}
        for name, delta in (("ts", shift), ("received_ms", shift), ("id", id_shift)):
            columns[name] = pc.add(columns[name], delta)
        window = segment.window_ms + shift
        name = segment_name(accounts[segment.account], window, segment.min_id + id_shift)
        size = write_segment(root, name, columns)
        copies.append(
            dataclasses.replace(
                segment,
                path=name,
                window_ms=window,
                file_bytes=size,
                min_ts=segment.min_ts + shift,
                max_ts=segment.max_ts + shift,
                min_id=segment.min_id + id_shift,
                max_id=segment.max_id + id_shift,
                max_received_ms=segment.max_received_ms + shift,
                index=shift_index(segment.index, shift),
            )
        )
    return copies


async def register(db: Database, accounts: list[str], rows: list[SegmentRow]) -> None:
    async with db.write_sessions() as session:
        for row in rows:
            await session.execute(
                insert(LogSegment).values(
                    account_id=accounts[row.account],
                    path=row.path,
                    window_ms=row.window_ms,
                    lines=row.lines,
                    bytes=row.file_bytes,
                    min_ts=row.min_ts,
                    max_ts=row.max_ts,
                    min_id=row.min_id,
                    max_id=row.max_id,
                    created_ms=row.max_received_ms,
                    max_received_ms=row.max_received_ms,
                    trigram_filters=row.index,
                )
            )
        await session.commit()


# -- loading the row store ----------------------------------------------------------------


async def load_hot(target: PostgresTarget, *, seed: int, lines: int, needles: int) -> int:
    """The last week through the store's write path, ``needles`` of the measured
    account's lines of the last hour planted; the lines of its last hour."""
    last_hour = sum(
        1
        for batches in generate(seed=seed, lines=lines, batch=LOAD_BATCH)
        for batch in batches
        if batch.account == 0
        for line in batch.lines
        if line.ts >= END_MS - HOUR_MS
    )
    pick = chosen(last_hour, needles)
    await target.load_start()
    connection = await asyncpg.connect(target.url.replace("+asyncpg", ""))
    try:
        await connection.execute(
            "SELECT setval(pg_get_serial_sequence('log_lines', 'id'), $1)", HOT_FIRST_ID
        )
    finally:
        await connection.close()
    for batches in generate(seed=seed, lines=lines, batch=LOAD_BATCH):
        for batch in batches:
            if batch.account == 0:
                batch.lines = [
                    plant(line) if line.ts >= END_MS - HOUR_MS and next(pick) else line
                    for line in batch.lines
                ]
        await target.load_round(batches)
    await target.load_finish(lines)
    return last_hour


# -- measuring --------------------------------------------------------------------------


class BackendCpu:
    """The CPU of the PostgreSQL backends connected to the database (``/proc``): a
    backend found at the end but not at the start counts from zero."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.connection: asyncpg.Connection | None = None

    async def readings(self) -> dict[int, float]:
        if self.connection is None:
            self.connection = await asyncpg.connect("postgresql://postgres@127.0.0.1:5432/postgres")
        pids = await self.connection.fetch(
            "SELECT pid FROM pg_stat_activity WHERE datname = $1", self.name
        )
        found = {}
        for (pid,) in pids:
            try:
                found[pid] = cpu_seconds(pid)
            except (FileNotFoundError, ProcessLookupError):
                pass
        return found

    async def close(self) -> None:
        if self.connection is not None:
            await self.connection.close()


# What a read refused by the read budget (422, EBUDGET) answers here.
OVER_BUDGET = "over budget"


@dataclass
class Timing:
    wall_s: float
    cpu_s: float  # this process + the database's backends
    answer: Any = None
    files: tuple[int, int] = (0, 0)  # segments searched, skipped by the index (a run)


async def timed(backends: BackendCpu, run: Callable[[], Awaitable[Any]], runs: int) -> Timing:
    """Median wall and CPU of ``runs`` runs, and the last answer."""
    walls, cpus = [], []
    answer = None
    files = segment_files()
    for _ in range(runs):
        before = await backends.readings()
        started, cpu_started = time.perf_counter(), time.process_time()
        try:
            answer = await run()
        except ReadBudgetExceeded:  # the server would answer 422: measured until then
            answer = OVER_BUDGET
        wall = time.perf_counter() - started
        cpu = time.process_time() - cpu_started
        after = await backends.readings()
        cpu += sum(value - before.get(pid, 0.0) for pid, value in after.items())
        walls.append(wall)
        cpus.append(cpu)
    (searched, skipped), (searched_before, skipped_before) = segment_files(), files
    counted = ((searched - searched_before) // runs, (skipped - skipped_before) // runs)
    return Timing(statistics.median(walls), statistics.median(cpus), answer, counted)


def segment_files() -> tuple[int, int]:
    """Segments this process's reads searched and skipped by their index so far (the
    metric ``tidegate_segment_files_total``)."""
    searched, skipped = (
        int(REGISTRY.get_sample_value("tidegate_segment_files_total", {"outcome": outcome}) or 0)
        for outcome in ("searched", "skipped")
    )
    return searched, skipped


@dataclass(frozen=True)
class Query:
    name: str
    case: Case
    from_ms: int
    to_ms: int
    expect: int | None  # matches it must find (None: not checked)
    walk: bool


class Reads:
    def __init__(self, db: Database, account_id: str) -> None:
        self.db = db
        self.account_id = account_id
        self.sealer = Sealer(b"b" * 32)

    async def on_reader(self, work: Callable[[PageReader], Any]) -> Any:
        async with self.db.read_sessions() as session:
            return await run_off_loop(
                database=self.db, session=session, account_id=self.account_id, page=work
            )

    async def page(self, query: Query, cursor: str | None) -> dict[str, Any]:
        request = ExportRequest(
            from_ms=query.from_ms,
            to_ms=query.to_ms,
            size=PAGE,
            line_filter=parse_line_filter(
                hosts=None, apps=None, levels=None, query=query.case.query
            ),
            prefer="head",
            pagination_id=cursor,
        )
        body: dict[str, Any] = await self.on_reader(
            lambda reader: page_of_lines(
                reader=reader, sealer=self.sealer, account_id=self.account_id, request=request
            )
        )
        return body

    async def walk(self, query: Query) -> int:
        """Every match, page by page: how many (each id once, else -1)."""
        ids: set[int] = set()
        count, cursor = 0, None
        while True:
            body = await self.page(query, cursor)
            ids.update(int(line["_id"]) for line in body["lines"])
            count += len(body["lines"])
            cursor = body["pagination_id"]
            if cursor is None:
                return count if count == len(ids) else -1

    async def aggregate(self, query: Query) -> Any:
        request = AggregateRequest(
            from_ms=query.from_ms,
            to_ms=query.to_ms,
            buckets=60,
            top=10,
            line_filter=parse_line_filter(
                hosts=None, apps=None, levels=None, query=query.case.query
            ),
        )
        return await self.on_reader(
            lambda reader: aggregation(reader=reader, account_id=self.account_id, request=request)
        )


# (first page, walk or None, aggregation) of a query at a size
Measured = tuple[Timing, Timing | None, Timing]


async def measure(
    reads: Reads, backends: BackendCpu, query: Query, runs: int
) -> tuple[Measured, list[str]]:
    problems = []
    first = await timed(backends, lambda: reads.page(query, None), runs)
    walked = None
    if query.walk:
        walked = await timed(backends, lambda: reads.walk(query), 1)
        if query.expect is not None and walked.answer != query.expect:
            problems.append(f"MISMATCH {query.name}: walk {walked.answer} for {query.expect}")
    aggregated = await timed(backends, lambda: reads.aggregate(query), runs)
    answer = aggregated.answer
    if query.expect is not None and (
        answer == OVER_BUDGET or answer.total != query.expect or not answer.exact
    ):
        problems.append(f"MISMATCH {query.name}: aggregate {answer} for {query.expect}")
    return (first, walked, aggregated), problems


def queries(
    first_ms: int, needles: int, old_needles: int, stored: int, *, cases: bool = True
) -> list[Query]:
    """The needles' queries (their matches known), then the six cases over all that is
    stored (``no query`` must count every stored line of the account)."""
    hour = END_MS - HOUR_MS
    found = [
        Query(f"{case.name}, last hour", case, hour, END_MS, needles, True) for case in NEEDLES
    ]
    found += [
        Query(f"{case.name}, all", case, first_ms, END_MS, needles + old_needles, True)
        for case in NEEDLES
    ]
    found += [
        Query(case.name, case, first_ms, END_MS, stored if case.query is None else None, False)
        for case in (CASES if cases else ())
    ]
    return found


# -- the run ----------------------------------------------------------------------------


@dataclass
class Plan:
    sizes: list[int]
    hot: int  # lines of the row store, and of each older week
    weeks: list[int]  # older weeks at each size


def plan(sizes: list[int], hot: int) -> Plan:
    """The row store's lines (``hot``, at most half the smallest size) and the older
    weeks of as many lines each that make up each size (rounded up)."""
    sizes = sorted(sizes)
    hot = min(hot, sizes[0] // 2)
    if hot < 1:
        raise ValueError("sizes too small")
    return Plan(sizes, hot, [math.ceil((size - hot) / hot) for size in sizes])


def directory_bytes(root: Path) -> int:
    return sum(path.stat().st_size for path in root.rglob("*") if path.is_file())


async def run(args: argparse.Namespace, work: Path) -> int:
    layout = plan(args.sizes, args.hot)
    segment_index.INDEXES.max_bytes = int(args.index_cache_mb * 2**20)
    print(
        f"row store: {layout.hot:,} lines (the last week); older weeks of {layout.hot:,} lines "
        f"as segments: {', '.join(map(str, layout.weeks))} for sizes "
        f"{', '.join(f'{size:,}' for size in layout.sizes)}",
        flush=True,
    )
    target = PostgresTarget(dataset=None, work=work)
    root, template_root = work / "segments", work / "template"
    results: dict[int, dict[str, Measured]] = {}
    problems: list[str] = []
    try:
        started = time.perf_counter()
        last_hour = await load_hot(target, seed=args.seed, lines=layout.hot, needles=args.needles)
        assert target.loaded is not None
        print(
            f"row store: {layout.hot:,} lines (+ other accounts: {target.loaded.lines:,} in all) "
            f"loaded in {time.perf_counter() - started:.0f} s; {args.needles:,} needles among "
            f"the last hour's {last_hour:,} lines",
            flush=True,
        )
        db = Database.connect(target.url)
        db.segment_dir = root
        backends = BackendCpu(target.name)
        async with db.read_sessions() as session:
            accounts = [
                account.id
                for account in (await session.execute(select(Account).order_by(Account.company)))
                .scalars()
                .all()
            ]
        assert accounts[0] == target.loaded.account_id, accounts
        template: list[SegmentRow] = []
        have = 0
        try:
            for weeks in layout.weeks:
                started, cpu_started = time.perf_counter(), time.process_time()
                while have < weeks:
                    have += 1
                    first_id = HOT_FIRST_ID - have * STRIDE
                    if have == 1:
                        rows = await asyncio.to_thread(
                            write_week, root, accounts, seed=args.seed + 1, lines=layout.hot,
                            weeks_back=1, first_id=first_id, needles=args.old_needles,
                        )  # fmt: skip
                    else:
                        if not template:
                            template = await asyncio.to_thread(
                                write_week, template_root, accounts, seed=args.seed + 2,
                                lines=layout.hot, weeks_back=0, first_id=0, needles=0,
                            )  # fmt: skip
                        rows = await asyncio.to_thread(
                            copy_week, template_root, root, accounts, template,
                            weeks_back=have, id_shift=first_id,
                        )  # fmt: skip
                    await register(db, accounts, rows)
                stored = layout.hot * (1 + weeks)
                segment_files = sum(1 for _ in root.rglob("*.parquet"))
                async with db.read_sessions() as session:
                    own, own_index = (
                        await session.execute(
                            select(
                                func.count(), func.sum(func.length(LogSegment.trigram_filters))
                            ).where(LogSegment.account_id == accounts[0])
                        )
                    ).one()
                print(
                    f"\n== {stored:,} lines of the measured account ({weeks} older weeks in "
                    f"{segment_files:,} segment files, {directory_bytes(root) / 1e6:,.0f} MB; "
                    f"the account's own: {own:,}, their indexes {own_index / 1e6:,.1f} MB); "
                    f"built in {time.perf_counter() - started:.0f} s "
                    f"({time.process_time() - cpu_started:.0f} s CPU)",
                    flush=True,
                )
                reads = Reads(db, accounts[0])
                first_ms = END_MS - (weeks + 1) * WEEK_MS
                measured: dict[str, Measured] = {}
                # Cold: the first read of the size fetches the segment indexes it needs
                # (a process keeps 64 MiB of them).
                segment_index.INDEXES.clear()
                print(f"load average {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
                for query in queries(
                    first_ms, args.needles, args.old_needles, stored, cases=not args.needles_only
                ):
                    runs = RUNS if query.walk else args.case_runs
                    found, wrong = await measure(reads, backends, query, runs)
                    problems += wrong
                    measured[query.name] = found
                    print(row_text(query.name, found, None), flush=True)
                results[stored] = measured
        finally:
            await backends.close()
            await db.dispose()
    finally:
        await target.drop()
    report(results)
    for problem in problems:
        print(problem)
    return 1 if problems else 0


def cell(timing: Timing | None, base: Timing | None) -> str:
    if timing is None:
        return "-"
    text = f"{timing.wall_s * 1000:,.0f} ({timing.cpu_s * 1000:,.0f})"
    if isinstance(timing.answer, str):
        text += " 422"
    if base is not None and base is not timing:
        text += f" {timing.cpu_s / max(base.cpu_s, 1e-6):.1f}x"
    return text


def row_text(name: str, found: Measured, base: Measured | None) -> str:
    aggregated = found[2]
    parts = [
        cell(t, None if base is None else b) for t, b in zip(found, base or found, strict=True)
    ]
    answer = aggregated.answer
    if answer == OVER_BUDGET:
        total = "422 (read budget)"
    else:
        total = f"{answer.total:,}" + ("" if answer.exact else " (capped)")
    searched, skipped = aggregated.files
    files = f"{searched:,} of {searched + skipped:,}" if searched + skipped else "-"
    return f"| {name} | {total} | {parts[0]} | {parts[1]} | {parts[2]} | {files} |"


def report(results: dict[int, dict[str, Measured]]) -> None:
    """Per size: ms wall (CPU ms: this process + PostgreSQL's backends), and the CPU's
    ratio to the smallest size's."""
    sizes = sorted(results)
    if not sizes:
        return
    base = results[sizes[0]]
    for size in sizes:
        print(f"\n{size:,} lines: ms wall (CPU ms), CPU ratio to {sizes[0]:,}")
        print(
            "| query | matches | first page | all matches | histogram + top "
            "| segments searched by the index (aggregation) |"
        )
        print("|---|---:|---|---|---|---|")
        for name, found in results[size].items():
            print(row_text(name, found, base[name] if size != sizes[0] else None))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sizes",
        default="1m,5m,20m",
        type=lambda text: [parse_count(part) for part in text.split(",")],
    )
    parser.add_argument("--hot", type=parse_count, default=500_000)
    parser.add_argument("--needles", type=int, default=1_000)
    parser.add_argument("--old-needles", type=int, default=10)
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--needles-only", action="store_true", help="leave out the six cases")
    parser.add_argument(
        "--index-cache-mb",
        type=float,
        default=segment_index.CACHE_BYTES / 2**20,
        help="the process's cache of parsed segment indexes (the server's: 64 MiB)",
    )
    parser.add_argument(
        "--case-runs", type=int, default=1, help="runs of each of the six cases (needles: 3)"
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tidegate-bench-scaling-"))
    try:
        return asyncio.run(run(args, work))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

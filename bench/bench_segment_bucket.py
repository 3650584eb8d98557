"""Segments in a bucket: what reading them through a host's cache costs, and the
alternative (DuckDB over pyarrow's S3 file system, no copies).

``python bench/bench_segment_bucket.py --lines 300k``

Loads the search data set (``search_dataset.py``) into SQLite, starts moto in server
mode (a real S3 API on 127.0.0.1), and moves every line into segments with a segment
bucket, as "host A" (the compactor uploads each file; its time and the upload's share
are printed). Then for each case, in process through the code the server runs (the
export and aggregation services in the export threads), the first page (10,000 lines)
and the aggregation (60 buckets, top 10), median of 3, read:

- **local**: host A's files as a plain segment directory (no bucket): the floor;
- **cold**: as "host B" with an empty cache, emptied again before each run: every read
  downloads the segments it opens;
- **warm**: host B with its cache full (what every read after the first sees).

Every answer must equal the local one (else MISMATCH, exit 1). Last, DuckDB alone with
hand-written SQL (``bench_segments.RAW_WHERE``): the aggregation's statements and a
first page (``ORDER BY ts, id LIMIT 10000``) over the local files, and over the same
objects through ``pyarrow.fs.S3FileSystem`` and a ``pyarrow.dataset`` registered in
DuckDB (each read fetches what it scans again).
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

import boto3
import duckdb
import pyarrow.dataset
import pyarrow.fs

from bench_search import load, parse_count
from bench_segments import RAW_WHERE, export_request, on_reader, raw_aggregation
from harness import start_moto
from search_dataset import CASES, Case, Expected
from search_stores import SqliteTarget
from tidegate.aggregate.schemas import AggregateRequest
from tidegate.aggregate.service import aggregation
from tidegate.auth.secrets import Sealer
from tidegate.db.engine import Database
from tidegate.export.service import page_of_lines
from tidegate.logs.compactor import CompactorConfig, compact_round
from tidegate.logs.filtering import parse_line_filter
from tidegate.logs.segment_cache import SegmentCache
from tidegate.logs.segment_objects import SegmentBucket, SegmentObjects
from tidegate.logs.segments import relation
from tidegate.objectstore.s3 import S3Target

RUNS = 3
REGION = "us-east-1"
KEY, SECRET = "bench-key", "bench-secret"
BUCKET = "segments"
PREFIX = "bench/"


async def timed(work: Callable[[], Any], *, before: Callable[[], None] | None = None) -> Any:
    """(median seconds of RUNS, the last answer); ``before`` runs untimed before each."""
    times, answer = [], None
    for _ in range(RUNS):
        if before is not None:
            before()
        started = time.perf_counter()
        answer = await work()
        times.append(time.perf_counter() - started)
    return statistics.median(times), answer


async def reads(
    db: Database, account_id: str, case: Case, expected: Expected, before: Callable[[], None] | None
) -> tuple[float, float, Any, Any]:
    sealer = Sealer(b"b" * 32)
    page_request = export_request(case, expected, None)
    aggregate_request = AggregateRequest(
        from_ms=expected.first_ms,
        to_ms=expected.last_ms,
        buckets=60,
        top=10,
        line_filter=parse_line_filter(hosts=None, apps=None, levels=None, query=case.query),
    )
    page_s, page = await timed(
        lambda: on_reader(
            db,
            account_id,
            lambda reader: page_of_lines(
                reader=reader, sealer=sealer, account_id=account_id, request=page_request
            ),
        ),
        before=before,
    )
    aggregate_s, answer = await timed(
        lambda: on_reader(
            db,
            account_id,
            lambda reader: aggregation(
                reader=reader, account_id=account_id, request=aggregate_request
            ),
        ),
        before=before,
    )
    page.pop("pagination_id", None)  # sealed with a fresh nonce each time
    return page_s, aggregate_s, page, answer


def raw(source: str, connection: Any, case: Case, expected: Expected) -> tuple[float, float]:
    """(aggregation s, first page s) of DuckDB alone over ``source``, median of RUNS."""
    where = RAW_WHERE[case.name]
    aggregate_times, page_times = [], []
    for _ in range(RUNS):
        started = time.perf_counter()
        raw_aggregation(connection, source, case, expected)
        aggregate_times.append(time.perf_counter() - started)
        started = time.perf_counter()
        connection.execute(
            "SELECT id, ts, host, app, level, env, file, ip, mac, tags, meta, line "
            f"FROM {source} WHERE {where} ORDER BY ts, id LIMIT 10000"
        ).fetchall()
        page_times.append(time.perf_counter() - started)
    return statistics.median(aggregate_times), statistics.median(page_times)


async def run(args: argparse.Namespace, work: Path) -> int:
    target = SqliteTarget(dataset=None, work=work)
    expected = await load([target], seed=args.seed, lines=args.lines)
    assert target.loaded is not None
    account_id = target.loaded.account_id
    moto, endpoint = start_moto()
    bucket = SegmentBucket(S3Target(endpoint, BUCKET, REGION, KEY, SECRET), PREFIX)
    cache_a, cache_b = work / "a-cache", work / "b-cache"
    problems: list[str] = []
    try:
        s3 = boto3.client(
            "s3", endpoint_url=endpoint, region_name=REGION,
            aws_access_key_id=KEY, aws_secret_access_key=SECRET,
        )  # fmt: skip
        s3.create_bucket(Bucket=BUCKET)

        # Host A: the compactor with the bucket.
        db = Database.connect(target.url)
        db.segment_objects = SegmentObjects(bucket)
        db.segment_cache = SegmentCache(cache_a, max_bytes=10**12, bucket=bucket)
        upload_s = 0.0
        upload = db.segment_objects.upload

        async def timed_upload(name: str, path: Path) -> None:
            nonlocal upload_s
            started = time.perf_counter()
            await upload(name, path)
            upload_s += time.perf_counter() - started

        db.segment_objects.upload = timed_upload  # type: ignore[method-assign]
        config = CompactorConfig(
            root=cache_a, after_ms=0, window_ms=86_400_000, max_lines=100_000, lease_ms=600_000
        )
        moved = segments = 0
        started = time.perf_counter()
        try:
            while (result := await compact_round(db, config, owner="bench")).segments:
                moved += result.lines
                segments += result.segments
        finally:
            await db.dispose()
        move_s = time.perf_counter() - started
        files = sorted(str(path) for path in cache_a.rglob("*.parquet"))
        size = sum(Path(path).stat().st_size for path in files)
        print(
            f"compacted {moved:,} lines into {segments} segments ({size / 2**20:.1f} MiB) in "
            f"{move_s:.1f} s ({moved / move_s:,.0f} lines/s), of which uploads {upload_s:.2f} s "
            f"({size / 2**20 / max(upload_s, 1e-9):.0f} MiB/s)",
            flush=True,
        )

        local = Database.connect(target.url)
        local.segment_dir = cache_a
        host_b = Database.connect(target.url)
        host_b.segment_dir = work / "b-segments"
        host_b.segment_cache = SegmentCache(cache_b, max_bytes=10**12, bucket=bucket)

        def empty_cache() -> None:
            shutil.rmtree(cache_b, ignore_errors=True)

        print(
            "| case | first page ms (local / cold / warm) | aggregation ms (local / cold / warm) |"
        )
        print("|---|---|---|")
        try:
            for case in CASES:
                floor = await reads(local, account_id, case, expected, None)
                cold = await reads(host_b, account_id, case, expected, empty_cache)
                warm = await reads(host_b, account_id, case, expected, None)
                for label, found in (("cold", cold), ("warm", warm)):
                    if found[2:] != floor[2:]:
                        problems.append(f"MISMATCH {case.name} {label}")
                print(
                    f"| {case.name} | {floor[0] * 1000:,.0f} / {cold[0] * 1000:,.0f} / "
                    f"{warm[0] * 1000:,.0f} | {floor[1] * 1000:,.0f} / {cold[1] * 1000:,.0f} / "
                    f"{warm[1] * 1000:,.0f} |",
                    flush=True,
                )
        finally:
            await local.dispose()
            await host_b.dispose()

        # DuckDB alone: local files against pyarrow's S3 file system.
        account_files = [path for path in files if account_id in path]
        keys = [f"{BUCKET}/{PREFIX}{Path(path).parent.name}/{Path(path).name}" for path in files]
        account_keys = [key for key in keys if account_id in key]
        s3fs = pyarrow.fs.S3FileSystem(
            access_key=KEY,
            secret_key=SECRET,
            region=REGION,
            endpoint_override=endpoint,
            scheme="http",
        )
        connection = duckdb.connect(config={"threads": 1})
        print(
            "\nDuckDB alone, ms: | case | aggregation (local / pyarrow S3) | first page (local / pyarrow S3) |"
        )
        print("|---|---|---|")
        for case in CASES:
            local_agg, local_page = raw(relation(account_files), connection, case, expected)
            dataset = pyarrow.dataset.dataset(account_keys, format="parquet", filesystem=s3fs)
            connection.register("remote", dataset)
            remote_agg, remote_page = raw("remote AS log_lines", connection, case, expected)
            connection.unregister("remote")
            print(
                f"| {case.name} | {local_agg * 1000:,.0f} / {remote_agg * 1000:,.0f} "
                f"| {local_page * 1000:,.0f} / {remote_page * 1000:,.0f} |",
                flush=True,
            )
    finally:
        moto.terminate()
        moto.wait()
        await target.drop()
    for problem in problems:
        print(problem)
    return 1 if problems else 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lines", type=parse_count, default=300_000)
    parser.add_argument("--seed", type=int, default=8)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tidegate-bench-segment-bucket-"))
    try:
        return asyncio.run(run(args, work))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: archiving one account's day into moto (a real S3 API process), beside its
floors in the same run.

    python bench/bench_archive.py [--lines 200000] [--part-mib 10]

Loads ``--lines`` realistic lines of one UTC day into a fresh SQLite database (through
the store's own writer), then measures, best of ``--rounds``:

* the floor: reading the day through the export's scan and encoding it (JSON records,
  gzip) with no upload: what the writer costs before the network;
* the peer: boto3's ``put_object`` of the same gzip bytes, already in memory (the
  upload alone, the way a client that held the whole day would do it);
* ``write_day``: read, encode, compress and upload in multipart parts, as the runner
  does; with the peak of Python memory it allocated (tracemalloc), beside the
  object's size: the writer holds a part and a chunk, not the day.

No timing here is a pass/fail test.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path

import boto3
import httpx

from harness import start_moto
from tidegate.archive.writer import Encoder, day_rows, object_key, write_day
from tidegate.db.engine import Database
from tidegate.db.migrate import upgrade_database
from tidegate.enterprise.schemas import AccountCreate
from tidegate.enterprise.service import create_account, create_enterprise
from tidegate.kit.destination_guard import GuardedTransport, policy_from_setting
from tidegate.logs.store import DAY_MS, NewLine, store_lines
from tidegate.objectstore.s3 import MultipartUpload, S3Client, S3Target

DAY = 20_000  # 2024-10-04
KEY, SECRET, REGION = "bench", "bench-secret", "us-east-1"


async def load(url: str, lines: int) -> str:
    await upgrade_database(url)
    db = Database.connect(url)
    try:
        async with db.write_sessions() as session:
            enterprise, _ = await create_enterprise(session=session, name="bench")
            body = AccountCreate.model_validate({"company": "b", "owneremail": "a@example.com"})
            account = await create_account(session=session, enterprise_id=enterprise.id, body=body)
            await session.commit()
        step = DAY_MS // lines
        for start in range(0, lines, 5_000):
            batch = [
                NewLine(
                    line=f"10.0.{n % 250}.{n % 199} - - GET /api/v1/orders/{n} HTTP/1.1 200 "
                    f"{n % 9000} ua=Mozilla/5.0 trace={n * 7919:x}",
                    ts=DAY * DAY_MS + n * step,
                    host=f"web-{n % 8}",
                    app=("checkout", "search", "auth")[n % 3],
                    level=("INFO", "WARN", "ERROR")[n % 3],
                    meta={"user": {"id": n, "plan": "pro"}, "region": "eu-west-1"},
                )
                for n in range(start, min(lines, start + 5_000))
            ]
            async with db.write_sessions() as session:
                await store_lines(
                    session=session,
                    account_id=account.account_id,
                    lines=batch,
                    received_ms=int(time.time() * 1000),
                )
                await session.commit()
        return account.account_id
    finally:
        await db.dispose()


async def floor(db: Database, account_id: str) -> bytes:
    """Read and encode the day, no upload (the object's bytes)."""
    encoder = Encoder()
    out = bytearray()
    async for rows in day_rows(db=db, account_id=account_id, day=DAY):
        out += encoder.encode(rows)
    return bytes(out + encoder.finish())


def report(
    args: argparse.Namespace, best: dict[str, float], *, size: int, peak: int, parts: str
) -> None:
    print(f"one day: {args.lines:,} lines, object {size / 2**20:.1f} MiB, best of {args.rounds}")
    for name, seconds in best.items():
        ratio = best["floor"] / seconds
        print(
            f"  {name:10s} {seconds:7.2f} s {args.lines / seconds:12,.0f} lines/s  {ratio:5.2f} x floor"
        )
    print(f"  write_day peak Python memory {peak / 2**20:.1f} MiB ({parts})")


def main_with(run: Callable[[argparse.Namespace, Path], Awaitable[None]], part: str) -> None:
    """Parses ``--lines``, ``--rounds`` and ``--<part>-mib``, runs in a temporary folder."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(f"--{part}-mib", type=int, default=10 if part == "part" else 4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        asyncio.run(run(args, Path(work)))


async def run(args: argparse.Namespace, work: Path) -> None:
    url = f"sqlite+aiosqlite:///{work / 'bench.sqlite3'}"
    started = time.perf_counter()
    account_id = await load(url, args.lines)
    print(f"loaded {args.lines:,} lines in {time.perf_counter() - started:.1f} s")
    moto, endpoint = start_moto()
    db = Database.connect(url)
    client = httpx.AsyncClient(
        transport=GuardedTransport(policy_from_setting("127.0.0.1"), limits=httpx.Limits()),
        trust_env=False,
    )
    try:
        s3 = boto3.client(
            "s3", endpoint_url=endpoint, region_name=REGION,
            aws_access_key_id=KEY, aws_secret_access_key=SECRET,
        )  # fmt: skip
        s3.create_bucket(Bucket="bench")
        target = S3Target(endpoint, "bench", REGION, KEY, SECRET)
        best = {"floor": float("inf"), "peer": float("inf"), "write_day": float("inf")}
        size = 0
        for _ in range(args.rounds):
            t = time.perf_counter()
            body = await floor(db, account_id)
            best["floor"] = min(best["floor"], time.perf_counter() - t)
            t = time.perf_counter()
            await asyncio.to_thread(s3.put_object, Bucket="bench", Key="peer.json.gz", Body=body)
            best["peer"] = min(best["peer"], time.perf_counter() - t)
            t = time.perf_counter()
            written = await write_day(
                db=db,
                upload=MultipartUpload(S3Client(client, target), object_key(account_id, DAY)),
                account_id=account_id,
                day=DAY,
                part_bytes=args.part_mib * 1024 * 1024,
            )
            best["write_day"] = min(best["write_day"], time.perf_counter() - t)
            size = written.bytes
            assert written.lines == args.lines
        # Memory in a run of its own: tracemalloc slows allocation down.
        tracemalloc.start()
        await write_day(
            db=db,
            upload=MultipartUpload(S3Client(client, target), object_key(account_id, DAY)),
            account_id=account_id,
            day=DAY,
            part_bytes=args.part_mib * 1024 * 1024,
        )
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        stored = s3.get_object(Bucket="bench", Key=written.key)["Body"].read()
        assert stored == body, "the object differs from the floor's bytes"
        report(args, best, size=size, peak=peak, parts=f"parts of {args.part_mib} MiB")
    finally:
        await client.aclose()
        await db.dispose()
        moto.terminate()
        moto.wait()


if __name__ == "__main__":
    os.environ.setdefault("TIDEGATE_PASSWORD_HASH_PROFILE", "owasp-minimum")
    main_with(run, "part")

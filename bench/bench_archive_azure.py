"""Benchmark: archiving one account's day into Azurite (Microsoft's emulator, a real
Blob service process) as an Azure block blob, beside its floors in the same run.

    python bench/bench_archive_azure.py [--lines 200000] [--block-mib 4]

Loads ``--lines`` realistic lines of one UTC day into a fresh SQLite database (as
``bench_archive.py`` does), then measures, best of ``--rounds``:

* the floor: reading the day through the export's scan and encoding it (JSON records,
  gzip) with no upload;
* the peer: one ``Put Blob`` of the same gzip bytes, already in memory (the upload
  alone, as a client that held the whole day would send it);
* ``write_day``: read, encode, compress and upload in blocks (``Put Block``, then
  ``Put Block List``), as the runner does; with the peak of Python memory it allocated
  (tracemalloc), beside the blob's size: the writer holds a block and a chunk, not
  the day.

Azurite is the one the tests install (``tests/tools/azurite``, ``npm ci``). No timing
here is a pass/fail test.
"""

from __future__ import annotations

import argparse
import base64
import io
import os
import subprocess
import time
import tracemalloc
from pathlib import Path

import httpx

from bench_archive import DAY, floor, load, main_with, report
from harness import free_port, wait_up
from tidegate.archive.writer import object_key, write_day
from tidegate.db.engine import Database
from tidegate.kit.destination_guard import GuardedTransport, policy_from_setting
from tidegate.objectstore.azure import (
    AzureBlobClient,
    AzureTarget,
    BlockBlobUpload,
    put_blob_headers,
)

AZURITE = Path(__file__).resolve().parents[1] / "tests/tools/azurite/node_modules/.bin/azurite-blob"
ACCOUNT = "devstoreaccount1"
# Azurite's documented development key (public).
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


def start_azurite(data: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    process = subprocess.Popen(
        [
            str(AZURITE),
            *("--blobHost", "127.0.0.1", "--blobPort", str(port), "--location", str(data)),
            *("--skipApiVersionCheck", "--disableTelemetry", "--silent"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}/{ACCOUNT}"
    wait_up(endpoint + "?comp=list")
    return process, endpoint


async def run(args: argparse.Namespace, work: Path) -> None:
    url = f"sqlite+aiosqlite:///{work / 'bench.sqlite3'}"
    started = time.perf_counter()
    account_id = await load(url, args.lines)
    print(f"loaded {args.lines:,} lines in {time.perf_counter() - started:.1f} s")
    azurite, endpoint = start_azurite(work / "azurite")
    db = Database.connect(url)
    client = httpx.AsyncClient(
        transport=GuardedTransport(policy_from_setting("127.0.0.1"), limits=httpx.Limits()),
        trust_env=False,
    )
    target = AzureTarget(endpoint, ACCOUNT, key=base64.b64decode(KEY))
    azure = AzureBlobClient(client, target, "bench")
    block_bytes = args.block_mib * 1024 * 1024

    def upload() -> BlockBlobUpload:
        return BlockBlobUpload(azure, object_key(account_id, DAY))

    try:
        await azure.create_container()
        best = {"floor": float("inf"), "peer": float("inf"), "write_day": float("inf")}
        size = 0
        body = b""
        for _ in range(args.rounds):
            t = time.perf_counter()
            body = await floor(db, account_id)
            best["floor"] = min(best["floor"], time.perf_counter() - t)
            t = time.perf_counter()
            peer_url = target.url("bench", "peer.json.gz")
            headers = put_blob_headers(
                target, peer_url, body, [("Content-Type", "application/gzip")]
            )
            put = await client.put(peer_url, content=body, headers=list(headers))
            assert put.status_code == 201, put.text
            best["peer"] = min(best["peer"], time.perf_counter() - t)
            t = time.perf_counter()
            written = await write_day(
                db=db, upload=upload(), account_id=account_id, day=DAY, part_bytes=block_bytes
            )
            best["write_day"] = min(best["write_day"], time.perf_counter() - t)
            size = written.bytes
            assert written.lines == args.lines
        # Memory in a run of its own: tracemalloc slows allocation down.
        tracemalloc.start()
        written = await write_day(
            db=db, upload=upload(), account_id=account_id, day=DAY, part_bytes=block_bytes
        )
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert written.key is not None
        stored = io.BytesIO()
        await azure.send("GET", written.key, into=stored)
        assert stored.getvalue() == body, "the blob differs from the floor's bytes"
        report(args, best, size=size, peak=peak, parts=f"blocks of {args.block_mib} MiB")
    finally:
        await client.aclose()
        await db.dispose()
        azurite.terminate()
        azurite.wait()


if __name__ == "__main__":
    os.environ.setdefault("TIDEGATE_PASSWORD_HASH_PROFILE", "owasp-minimum")
    main_with(run, "block")

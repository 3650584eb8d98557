"""What the registry listing every read of an account with segments makes costs, as the
account's segments grow (issue 19's scaling question, the one part of a constant-match
read that grows with what is stored; docs/log-store.md, "Scaling with what is stored").

``python bench/bench_segment_registry.py [--dsn postgresql://postgres@127.0.0.1:5432/NAME]``

Creates the database NAME (dropped at the end), a table shaped like ``log_segments``
(same columns and account index, no foreign keys) with a 500 kB index per segment (the
size of a 100,000-line segment's of the search bench), and times the query of
``segments.account_segments`` through asyncpg (a floor: tidegate's reader adds its own
per-row costs) at 10, 50, 200 and 2,000 segments of one account (1M to 200M lines at
the default ``segment_max_lines``), then with 2,000 segments of another account beside.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import time
from urllib.parse import urlsplit

import asyncpg

LISTING = (
    "SELECT id, path, lines, min_ts, max_ts, min_id, max_id, max_received_ms"
    " FROM log_segments WHERE account_id = $1 ORDER BY id"
)
SCHEMA = (
    "CREATE TABLE log_segments (id serial PRIMARY KEY, account_id varchar(24),"
    " path varchar(256) UNIQUE, window_ms bigint, lines bigint, bytes bigint, min_ts bigint,"
    " max_ts bigint, min_id bigint, max_id bigint, created_ms bigint, max_received_ms bigint,"
    " trigram_filters bytea)",
    "CREATE INDEX ix_log_segments_account_ts ON log_segments (account_id, min_ts)",
)
INSERT = (
    "INSERT INTO log_segments (account_id, path, window_ms, lines, bytes, min_ts, max_ts,"
    " min_id, max_id, created_ms, max_received_ms, trigram_filters)"
    " VALUES ($1, $2, 0, 100000, 0, $3, $4, $5, $5, 0, $4, $6)"
)


async def fill(conn: asyncpg.Connection, account: str, start: int, count: int) -> None:
    index = os.urandom(500_000)
    rows = [
        (account, f"{account}/{i}.parquet", i * 1000, i * 1000 + 999, i, index)
        for i in range(start, start + count)
    ]
    await conn.executemany(INSERT, rows)
    await conn.execute("ANALYZE log_segments")


async def listing_ms(conn: asyncpg.Connection, account: str) -> tuple[float, float]:
    """Median wall ms and mean client CPU ms of one listing, over 300 after 20 warm-ups."""
    for _ in range(20):
        await conn.fetch(LISTING, account)
    walls: list[float] = []
    cpu = time.process_time()
    for _ in range(300):
        start = time.perf_counter()
        await conn.fetch(LISTING, account)
        walls.append(time.perf_counter() - start)
    return statistics.median(walls) * 1000, (time.process_time() - cpu) / 300 * 1000


async def run(dsn: str) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        for statement in SCHEMA:
            await conn.execute(statement)
        have = 0
        first = 0.0
        for count in (10, 50, 200, 2000):
            await fill(conn, "a", have, count - have)
            have = count
            wall, cpu = await listing_ms(conn, "a")
            first = first or wall
            print(
                f"{count:5d} segments ({count / 10:g}M lines): {wall:.3f} ms wall"
                f" ({wall / first:.1f}x 10 segments), {cpu:.3f} ms client CPU a listing"
                " (two a read)"
            )
        await fill(conn, "b", 0, 2000)
        wall, cpu = await listing_ms(conn, "a")
        print(
            f" 2000 segments + 2000 of another account: {wall:.3f} ms wall"
            f" ({wall / first:.1f}x), {cpu:.3f} ms client CPU"
        )
    finally:
        await conn.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dsn", default="postgresql://postgres@127.0.0.1:5432/segment_registry")
    dsn = parser.parse_args().dsn
    parts = urlsplit(dsn)
    where = ["-h", parts.hostname or "127.0.0.1", "-p", str(parts.port or 5432)]
    where += ["-U", parts.username or "postgres"]
    name = parts.path.lstrip("/")
    subprocess.run(["createdb", *where, name], check=True)
    try:
        asyncio.run(run(dsn))
    finally:
        subprocess.run(["dropdb", *where, name], check=True)


if __name__ == "__main__":
    main()

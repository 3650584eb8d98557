"""Benchmark: lines through the syslog listener against the same lines through POST
/logs/ingest, on one real `tidegate serve` (SQLite, one worker), in one run; and the
server's memory while one connection sends a long line without end.

    python bench/bench_syslog.py [--lines 50000] [--hostile-mb 64]

Syslog: one TCP connection writes ``--lines`` RFC 5424 lines (the platform's template,
newline framing) as fast as the socket takes them. Ingest: one HTTP connection posts
the same texts with the meta the listener stores for them (the syslog header's fields),
in 1,000-line batches, one after the other. Each is timed from the first
byte until the account's usage shows every line stored, with the server's CPU (user +
system, from /proc) per 1,000 lines. Hostile: a connection sends ``--hostile-mb`` MB
with no newline, then one good line; the server's peak RSS before and after is printed
(the line limit is 64 KiB, so the peak should not move by the megabytes sent).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

from harness import Server, cpu_seconds, db_enterprise_token, free_port, ingestion_key, status_kb

# What the listener stores in meta for these lines, sent with the ingested ones too so
# that both store (and index) the same rows.
SYSLOG_META = {"priority": 14, "facility": "user", "severity": "info", "version": 1, "procid": "77"}


def syslog_line(key: str, number: int) -> bytes:
    now = datetime.now(UTC).isoformat(timespec="milliseconds")
    return (
        f'<14>1 {now} web-{number % 7} api 77 - [logdna@48950 key="{key}"] '
        f"GET /orders/{number} 200 {number % 997}ms user={number % 31}\n"
    ).encode()


def stored(http: httpx.Client, headers: dict[str, str]) -> int:
    response = http.get("/v1/usage", headers=headers)
    response.raise_for_status()
    return int(response.json()["totals"]["lines_stored"])


def wait_stored(http: httpx.Client, headers: dict[str, str], count: int) -> None:
    deadline = time.monotonic() + 600
    while stored(http, headers) < count:
        if time.monotonic() > deadline:
            raise RuntimeError("lines were not stored")
        time.sleep(0.02)


def account(server: Server, token: str) -> tuple[dict[str, str], str]:
    enterprise = {"Authorization": f"Token {token}"}
    with httpx.Client(base_url=server.base, timeout=60) as http:
        created = http.post(
            "/v3/enterprise/account",
            json={"company": "Bench", "owneremail": "b@example.com", "enable_syslog": True},
            headers=enterprise,
        )
        created.raise_for_status()
        account_id = created.json()["data"]["account_id"]
    headers = {**enterprise, "x-delegate-account-id": account_id}
    return headers, ingestion_key(server.base, headers)


def run_syslog(server: Server, token: str, port: int, lines: int) -> tuple[float, float]:
    headers, key = account(server, token)
    payload = b"".join(syslog_line(key, number) for number in range(lines))
    with httpx.Client(base_url=server.base, timeout=60) as http:
        cpu, start = cpu_seconds(server.pid), time.perf_counter()
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(payload)
        wait_stored(http, headers, lines)
        return time.perf_counter() - start, cpu_seconds(server.pid) - cpu


def run_ingest(server: Server, token: str, lines: int) -> tuple[float, float]:
    headers, key = account(server, token)
    texts = [
        f"GET /orders/{number} 200 {number % 997}ms user={number % 31}" for number in range(lines)
    ]
    with httpx.Client(base_url=server.base, timeout=60) as http:
        cpu, start = cpu_seconds(server.pid), time.perf_counter()
        for first in range(0, lines, 1000):
            batch = [
                {"line": text, "app": "api", "level": "INFO", "meta": SYSLOG_META}
                for text in texts[first : first + 1000]
            ]
            http.post(
                "/logs/ingest",
                params={"hostname": "web-1"},
                json={"lines": batch},
                headers={"apikey": key},
            ).raise_for_status()
        wait_stored(http, headers, lines)
        return time.perf_counter() - start, cpu_seconds(server.pid) - cpu


def run_hostile(server: Server, token: str, port: int, megabytes: int) -> tuple[int, int]:
    headers, key = account(server, token)
    before = status_kb(server.pid, "VmHWM")["VmHWM"]
    chunk = b"<14>1 - h a - - - " + b"x" * (1 << 20)
    with socket.create_connection(("127.0.0.1", port)) as sock:
        for _ in range(megabytes):
            sock.sendall(chunk)
        sock.sendall(b"\n" + syslog_line(key, 1))
    with httpx.Client(base_url=server.base, timeout=60) as http:
        wait_stored(http, headers, 1)  # the cut line carries no key: dropped
    return before, status_kb(server.pid, "VmHWM")["VmHWM"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lines", type=int, default=50_000)
    parser.add_argument("--hostile-mb", type=int, default=64)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite+aiosqlite:///{Path(tmp) / 'bench.sqlite3'}"
        port = free_port()
        env = {
            **os.environ,
            "TIDEGATE_DATABASE_URL": url,
            "TIDEGATE_DATA_DIR": tmp,
            "TIDEGATE_BOOTSTRAP": "0",
            "TIDEGATE_RATE_LIMIT_PER_MINUTE": "0",
            "TIDEGATE_SYSLOG_PORT": str(port),
        }
        server = Server(env)
        try:
            token = asyncio.run(db_enterprise_token(url))
            print(f"{args.lines} lines, SQLite, one worker")
            for name, run in (
                ("syslog (1 TCP connection)", lambda: run_syslog(server, token, port, args.lines)),
                ("/logs/ingest (1,000-line posts)", lambda: run_ingest(server, token, args.lines)),
            ):
                seconds, cpu = run()
                print(
                    f"  {name:34} {args.lines / seconds:9.0f} lines/s"
                    f"  {1000 * cpu / args.lines * 1000:6.1f} ms CPU per 1,000 lines"
                )
            before, after = run_hostile(server, token, port, args.hostile_mb)
            print(
                f"  hostile: {args.hostile_mb} MB without a newline: peak RSS "
                f"{before // 1024} MB before, {after // 1024} MB after"
            )
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

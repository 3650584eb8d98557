"""Benchmark: sign-ins (argon2, 64 MiB, off the loop in a pool of 2 threads) and
/healthz latency meanwhile, beside the idle latency (the floor); then signed-in reads
(cookie session, logdna-cli signed query) beside key reads.

    python bench/bench_signin.py [--signins 40] [--concurrency 8] [--reads 300]

One worker, SQLite. The floor is what /healthz costs when nothing else runs; during
the sign-in burst the loop must stay free, so /healthz should stay near it while the
sign-ins queue for the two hashing threads.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import hmac
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import httpx

from harness import Server, cli_enterprise_token, new_account

PASSWORD = "bench password 1"


async def probe(http: httpx.AsyncClient, done: asyncio.Event) -> list[float]:
    latencies: list[float] = []
    while not done.is_set():
        sent = time.monotonic()
        await http.get("/healthz")
        latencies.append((time.monotonic() - sent) * 1000)
        await asyncio.sleep(0.02)
    return latencies


def summary(latencies: list[float]) -> str:
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    return f"p50 {statistics.median(latencies):.1f} p99 {p99:.1f} max {latencies[-1]:.1f} ms"


async def make_person(http: httpx.AsyncClient, headers: dict[str, str], email: str) -> None:
    made = await http.post(
        "/v1/config/members", json={"email": email, "role": "member"}, headers=headers
    )
    link = made.json()["invitation"]["link"]
    token = link.split("token=", 1)[1]
    accepted = await http.post(
        "/v1/auth/invitation/accept", json={"token": token, "password": PASSWORD}
    )
    assert accepted.status_code == 200, accepted.text


async def timed_reads(http: httpx.AsyncClient, count: int, request: object) -> tuple[float, float]:
    latencies = []
    for _ in range(count):
        sent = time.monotonic()
        response = await request()  # type: ignore[operator]
        assert response.status_code == 200, response.text
        latencies.append((time.monotonic() - sent) * 1000)
    return statistics.median(latencies), sorted(latencies)[int(len(latencies) * 0.99)]


async def measure(base: str, headers: dict[str, str], args: argparse.Namespace) -> list[str]:
    rows = []
    async with httpx.AsyncClient(base_url=base, timeout=600) as http:
        emails = [f"p{i}@bench.example" for i in range(args.concurrency)]
        for email in emails:
            await make_person(http, headers, email)

        done = asyncio.Event()
        idle = asyncio.create_task(probe(http, done))
        await asyncio.sleep(2)
        done.set()
        rows.append(f"{'idle /healthz (floor)':>34}: {summary(await idle)}")

        done = asyncio.Event()
        during = asyncio.create_task(probe(http, done))
        queue: asyncio.Queue[str] = asyncio.Queue()
        for index in range(args.signins):
            queue.put_nowait(emails[index % len(emails)])
        signin_ms: list[float] = []

        async def worker() -> None:
            async with httpx.AsyncClient(base_url=base, timeout=600) as own:
                while not queue.empty():
                    email = queue.get_nowait()
                    sent = time.monotonic()
                    response = await own.post(
                        "/v1/auth/session", json={"email": email, "password": PASSWORD}
                    )
                    assert response.status_code == 200, response.text
                    signin_ms.append((time.monotonic() - sent) * 1000)

        started = time.monotonic()
        await asyncio.gather(*(worker() for _ in range(args.concurrency)))
        wall = time.monotonic() - started
        done.set()
        rows.append(
            f"{args.signins} sign-ins, {args.concurrency} at once: {wall:.1f} s "
            f"({args.signins / wall:.1f}/s), each {summary(signin_ms)}"
        )
        rows.append(f"{'/healthz during the sign-ins':>34}: {summary(await during)}")

        # Reads: a key, a browser session, a signed query.
        signed_in = await http.post(
            "/v1/auth/session", json={"email": emails[0], "password": PASSWORD}
        )
        cookie = signed_in.cookies.get("tidegate_session")
        http.cookies.clear()
        basic = base64.b64encode(f"{emails[0]}:{PASSWORD}".encode()).decode()
        login = (await http.post("/login", headers={"authorization": f"Basic {basic}"})).json()
        account = login["accounts"][0]
        last = [0]

        def signed_params() -> dict[str, str]:
            ts = max(int(time.time() * 1000), last[0] + 1)
            last[0] = ts
            text = f"email={quote(emails[0], safe='')}&id={account}&ts={ts}"
            mac = hmac.new(login["token"].encode(), text.encode(), hashlib.sha256).hexdigest()
            return {"email": emails[0], "id": account, "ts": str(ts), "hmac": mac}

        cases = {
            "GET /v1/config/board, key": lambda: http.get("/v1/config/board", headers=headers),
            "GET /v1/config/board, cookie": lambda: http.get(
                "/v1/config/board", headers={"Cookie": f"tidegate_session={cookie}"}
            ),
            "GET /v1/config/board, signed": lambda: http.get(
                "/v1/config/board", params=signed_params()
            ),
        }
        for label, request in cases.items():
            p50, p99 = await timed_reads(http, args.reads, request)
            rows.append(f"{label:>34}: p50 {p50:.1f} p99 {p99:.1f} ms ({args.reads} reads)")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--signins", type=int, default=40)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--reads", type=int, default=300)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tidegate-bench-"))
    env = {
        **os.environ,
        "TIDEGATE_DATABASE_URL": f"sqlite+aiosqlite:///{work / 'bench.sqlite3'}",
        "TIDEGATE_DATA_DIR": str(work / "var"),
        "TIDEGATE_BOOTSTRAP": "0",
        "TIDEGATE_RATE_LIMIT_PER_MINUTE": "0",
        "TIDEGATE_SIGNIN_MAX_FAILURES": "1000",
        "TIDEGATE_SECRET_KEY": "bench",
    }
    token = cli_enterprise_token(env)
    try:
        server = Server(env, "--log-level", "warning", output=None)
        try:
            enterprise = {"Authorization": f"Token {token}"}
            account_id = new_account(server.base, enterprise)
            headers = {**enterprise, "x-delegate-account-id": account_id}
            for row in asyncio.run(measure(server.base, headers, args)):
                print(row)
        finally:
            server.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

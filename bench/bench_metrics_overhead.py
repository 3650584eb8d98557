"""Benchmark: what the operator metrics (docs/metrics.md) cost the ingest path.

    python bench/bench_metrics_overhead.py [--requests 400] [--rounds 3]

Each variant runs in a fresh interpreter with ``PROMETHEUS_MULTIPROC_DIR`` set, as
under ``tidegate serve`` (values written to memory-mapped files, the costlier mode):
the whole app in process on a fresh SQLite file, ``--requests`` POST /logs/ingest of
100 realistic lines each through httpx's ASGI transport. Reported: the process's CPU
(user + system) per 1,000 lines, client included (the same in both variants).

- ``metrics``: as shipped.
- ``none``: the request middleware left out and every metric object of
  ``tidegate.metrics`` replaced by one that does nothing, so the writer, pools and
  alerts record nothing either (throttle series included; no throttle runs here).

Variants alternate ``--rounds`` times; the median of each is printed with the
difference. Then the metric calls alone: the request middleware around a bare ASGI app
and the writer's calls for one 100-line write, CPU per call (on a shared machine the
whole-path difference drowns in noise; this one does not). Not a test: it prints
numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import asyncio, json, os, sys, time
from pathlib import Path

variant, requests, data_dir = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])

from tidegate import metrics


class Nothing:
    def labels(self, *args, **kwargs):
        return self

    def inc(self, *args, **kwargs):
        return None

    dec = observe = set = inc


if variant == "none":
    for name in metrics.__all__:
        if name.isupper() and name not in ("CONTENT_TYPE", "MULTIPROCESS_ENV"):
            setattr(metrics, name, Nothing())
    metrics.lines_committed = lambda **kwargs: None
    metrics.lines_failed = lambda *args: None

import httpx
from tidegate.app import create_app
from tidegate.config import Settings


async def main():
    from tidegate.db.engine import Database
    from tidegate.db.migrate import upgrade_database
    from tidegate.enterprise.service import create_enterprise

    url = f"sqlite+aiosqlite:///{data_dir / 'bench.sqlite3'}"
    await upgrade_database(url)
    db = Database.connect(url)
    async with db.write_sessions() as session:
        _, token = await create_enterprise(session=session, name="bench")
        await session.commit()
    await db.dispose()
    settings = Settings(
        database_url=url,
        data_dir=data_dir,
        secret_key="bench",
        rate_limit_per_minute=0,
        bootstrap=False,
    )
    app = create_app(settings)
    if variant == "none":
        app.user_middleware = [m for m in app.user_middleware if m.cls.__name__ != "RequestMetrics"]
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as http:
            admin = {"Authorization": f"Token {token}"}
            account = await http.post(
                "/v3/enterprise/account",
                json={"company": "Bench", "owneremail": "o@bench.example", "retention": 7},
                headers=admin,
            )
            account_id = account.json()["data"]["account_id"]
            key = await http.post(
                "/v1/config/keys?type=ingestion",
                json={"name": "bench"},
                headers={**admin, "x-delegate-account-id": account_id},
            )
            ingest_key = key.json()["key"]
            now = int(time.time() * 1000)
            lines = [
                {
                    "line": f"GET /api/orders/{n} 200 {n * 7 % 900} ms user=u{n % 50}",
                    "app": ("web", "api", "worker")[n % 3],
                    "level": ("INFO", "WARN", "ERROR")[n % 3],
                    "timestamp": now + n,
                    "meta": {"request_id": f"r{n}", "bytes": n * 31},
                }
                for n in range(100)
            ]
            body = json.dumps({"lines": lines}).encode()
            headers = {"apikey": ingest_key, "content-type": "application/json"}
            for _ in range(20):  # warm up: caches, the writer's connection
                await http.post("/logs/ingest?hostname=bench", content=body, headers=headers)
            started = time.process_time()
            for _ in range(requests):
                answer = await http.post(
                    "/logs/ingest?hostname=bench", content=body, headers=headers
                )
                assert answer.status_code == 200, answer.text
            spent = time.process_time() - started
    print(json.dumps({"cpu_ms_per_1000_lines": spent * 1000 / (requests * 100 / 1000)}))


asyncio.run(main())
"""


MICRO = r"""
import asyncio, json, time
from tidegate.api.request_metrics import RequestMetrics
from tidegate.logs.writer import _observe_group, _succeed, _Write
from tidegate.logs.store import StoreBatch


async def bare(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"{}"})


async def main():
    wrapped = RequestMetrics(bare)
    scope = {"type": "http", "path": "/logs/ingest", "method": "POST"}

    async def receive():
        return {"type": "http.request", "body": b"x" * 4096, "more_body": False}

    async def send(message):
        return None

    rounds = 20000
    figures = {}
    for name, app in (("bare", bare), ("wrapped", wrapped)):
        started = time.process_time()
        for _ in range(rounds):
            await app(scope, receive, send)
        figures[name] = (time.process_time() - started) / rounds * 1e6
    loop = asyncio.get_running_loop()
    batch = StoreBatch(account_id="a", received_ms=0, rows=[()] * 100, lines_stored=100,
                       bytes_stored=6000)
    started = time.process_time()
    for _ in range(rounds):
        item = _Write([batch], 100, loop.time(), loop.create_future())
        _observe_group([item], time.perf_counter())
        _succeed(item)
    figures["writer"] = (time.process_time() - started) / rounds * 1e6
    print(json.dumps(figures))


asyncio.run(main())
"""


def micro() -> dict[str, float]:
    """Microseconds of CPU per request: the middleware around a bare ASGI app, and the
    writer's metric calls for one 100-line write committed alone."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": tmp}
        result = subprocess.run(
            [sys.executable, "-c", MICRO], env=env, capture_output=True, text=True, check=False
        )
        if result.returncode != 0:
            raise SystemExit(result.stderr)
        figures: dict[str, float] = json.loads(result.stdout.strip().splitlines()[-1])
        return figures


def run(variant: str, requests: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        prom = Path(tmp) / "prometheus"
        prom.mkdir()
        env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(prom)}
        result = subprocess.run(
            [sys.executable, "-c", CHILD, variant, str(requests), tmp],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise SystemExit(result.stderr)
        return float(json.loads(result.stdout.strip().splitlines()[-1])["cpu_ms_per_1000_lines"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    figures: dict[str, list[float]] = {"none": [], "metrics": []}
    for _ in range(args.rounds):
        for variant in figures:
            figures[variant].append(run(variant, args.requests))
    without = statistics.median(figures["none"])
    with_metrics = statistics.median(figures["metrics"])
    print(
        f"ingest CPU per 1,000 lines ({args.requests} requests of 100 lines, median of "
        f"{args.rounds}):"
    )
    print(f"  without metrics: {without:7.2f} ms   {figures['none']}")
    print(f"  with metrics:    {with_metrics:7.2f} ms   {figures['metrics']}")
    print(
        f"  difference:      {with_metrics - without:+7.2f} ms "
        f"({(with_metrics / without - 1) * 100:+.1f} %)"
    )
    figures_us = micro()
    middleware = figures_us["wrapped"] - figures_us["bare"]
    per_request = middleware + figures_us["writer"]
    print("the metric calls alone, CPU per ingest request (20,000 calls, multiprocess mode):")
    print(
        f"  middleware: {middleware:6.1f} us   writer (one 100-line write): "
        f"{figures_us['writer']:6.1f} us"
    )
    # Ten requests of 100 lines make 1,000 lines; microseconds to milliseconds.
    print(f"  = {per_request * 10 / 1000:.3f} ms per 1,000 lines at 100 lines a request")


if __name__ == "__main__":
    main()

"""Benchmark: events per second through POST /gateway/{id} into each network
destination, the destination's receiver answering at once, beside the no-processor
floor (``source -> blackhole``) of the same server in the same run.

    python bench/bench_destination_delivery.py [--seconds 5] [--events 100] [--rounds 3]

One ``tidegate serve`` (SQLite, one worker) with one route per destination, each
feeding ``source -> <destination>``; every destination is pointed (``TIDEGATE_
DESTINATION_ENDPOINTS``, ``TIDEGATE_DESTINATION_ALLOW``) at one local receiver process
that reads each request whole and answers as the API does on success (Put Blob 201,
remote write 204, Datadog 202, New Relic 202, Honeycomb 200 ``[]``, http 200), so what
is measured is tidegate's work: decoding, the pipeline, encoding, compressing, signing,
sending and waiting for the answer (``ack_enabled: true``). The events are metric
events with a ``message`` too, so every destination (``prometheus-remote-write``
included) carries each of them. Load: a separate process with 16 concurrent
connections posting one JSON array of ``--events`` events per request; interleaved
rounds, the median of each. No timing here is a pass/fail test.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import httpx

from harness import Server, api_data, cli_enterprise_token, free_port, gateway_pipeline, new_account
from harness import publish as publish_pipeline

AZURITE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

RECEIVER = textwrap.dedent(
    """
    import asyncio, sys

    async def handle(reader, writer):
        try:
            while True:
                head = await reader.readuntil(b"\\r\\n\\r\\n")
                lines = head.decode("latin-1").split("\\r\\n")
                method, target, _ = lines[0].split(" ", 2)
                length = 0
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    if name.lower() == "content-length":
                        length = int(value)
                await reader.readexactly(length)
                if method == "PUT":
                    status, body = 201, b""
                elif target.endswith("/api/v1/write"):
                    status, body = 204, b""
                elif target.startswith("/1/batch/"):
                    status, body = 200, b"[]"
                elif target in ("/api/v2/logs", "/log/v1", "/metric/v1"):
                    status, body = 202, b"{}"
                else:
                    status, body = 200, b"ok"
                writer.write(
                    f"HTTP/1.1 {status} X\\r\\nContent-Length: {len(body)}\\r\\n\\r\\n".encode()
                    + body
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def main():
        server = await asyncio.start_server(handle, "127.0.0.1", int(sys.argv[1]))
        async with server:
            await server.serve_forever()

    asyncio.run(main())
    """
)

LOAD = textwrap.dedent(
    """
    import asyncio, sys, time
    import httpx

    async def main(url, key, body_path, seconds, concurrency):
        body = open(body_path, "rb").read()
        headers = {"Authorization": f"Token {key}", "Content-Type": "application/json"}
        done = 0
        failed = 0
        deadline = time.monotonic() + seconds
        limits = httpx.Limits(max_connections=concurrency)
        async with httpx.AsyncClient(limits=limits, timeout=60) as http:
            async def worker():
                nonlocal done, failed
                while time.monotonic() < deadline:
                    answer = await http.post(url, content=body, headers=headers)
                    if answer.status_code == 200:
                        done += 1
                    else:
                        failed += 1
            started = time.monotonic()
            await asyncio.gather(*(worker() for _ in range(concurrency)))
            elapsed = time.monotonic() - started
        print(done / elapsed, failed)

    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5])))
    """
)


def destinations(receiver: str) -> dict[str, tuple[str, dict[str, object]]]:
    azure = (
        f"DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={AZURITE_KEY};"
        f"BlobEndpoint={receiver}/devstoreaccount1"
    )
    return {
        "floor": ("blackhole", {}),
        "http ndjson": ("http", {"uri": f"{receiver}/http", "encoding": "ndjson"}),
        "prometheus-remote-write": (
            "prometheus-remote-write",
            {"endpoint": f"{receiver}/api/v1/write", "auth": {"strategy": "none"}},
        ),
        "azure-blob-storage": (
            "azure-blob-storage",
            {"connection_string": azure, "container_name": "logs", "encoding": "ndjson"},
        ),
        "datadog-logs": (
            "datadog-logs",
            {"api_key": "k", "site": "us1", "compression": "gzip", "ack_enabled": True},
        ),
        "new-relic": ("new-relic", {"api": "logs", "account_id": "a", "license_key": "k"}),
        "honeycomb-logs": ("honeycomb-logs", {"api_key": "k", "dataset": "bench"}),
    }


def setup(base: str, token: str, receiver: str) -> dict[str, tuple[str, str]]:
    enterprise = {"Authorization": f"Token {token}"}
    routes: dict[str, tuple[str, str]] = {}
    with httpx.Client(base_url=base, timeout=30) as http:
        headers = {**enterprise, "x-delegate-account-id": new_account(base, enterprise)}
        for name, (type_, config) in destinations(receiver).items():
            pipeline, route, key, source = gateway_pipeline(http, headers, name)
            api_data(
                http.post(
                    f"/v3/pipeline/{pipeline}/sink",
                    json={"type": type_, "user_config": config, "inputs": [source]},
                    headers=headers,
                )
            )
            publish_pipeline(http, headers, pipeline)
            routes[name] = (route, key)
    return routes


def load(url: str, key: str, body: Path, seconds: float) -> float:
    out = subprocess.run(
        [sys.executable, "-c", LOAD, url, key, str(body), str(seconds), "16"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    rate, failed = float(out[0]), int(out[1])
    if failed:
        raise RuntimeError(f"{failed} requests not answered 200 at {url}")
    return rate


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--events", type=int, default=100, help="events per request")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tidegate-bench-dest-"))
    port = free_port()
    receiver = subprocess.Popen([sys.executable, "-c", RECEIVER, str(port)])
    base_receiver = f"http://127.0.0.1:{port}"
    endpoints = ",".join(
        f"{type_}={base_receiver}" for type_ in ("datadog-logs", "new-relic", "honeycomb-logs")
    )
    env = {
        **os.environ,
        "TIDEGATE_DATABASE_URL": f"sqlite+aiosqlite:///{work / 'bench.sqlite3'}",
        "TIDEGATE_DATA_DIR": str(work / "var"),
        "TIDEGATE_BOOTSTRAP": "0",
        "TIDEGATE_RATE_LIMIT_PER_MINUTE": "0",
        "TIDEGATE_DESTINATION_ALLOW": "127.0.0.1/32",
        "TIDEGATE_DESTINATION_ENDPOINTS": endpoints,
    }
    env.pop("TIDEGATE_REDIS_URL", None)
    body = work / "body.json"
    body.write_text(
        json.dumps(
            [
                {
                    "message": f"GET /api/v1/orders/{n} 200",
                    "name": "http_requests",
                    "kind": "absolute",
                    "value": {"type": "gauge", "value": n},
                    "tags": {"route": f"/api/{n % 10}", "host": f"web-{n % 4}"},
                    "app": "checkout",
                }
                for n in range(args.events)
            ]
        )
    )
    token = cli_enterprise_token(env)
    server = Server(env, "--log-level", "warning", output=None, timeout=120)
    try:
        routes = setup(server.base, token, base_receiver)
        for route, key in routes.values():
            load(f"{server.base}/gateway/{route}", key, body, 1)  # warm-up
        samples: dict[str, list[float]] = {name: [] for name in routes}
        for _ in range(args.rounds):
            for name, (route, key) in routes.items():
                rate = load(f"{server.base}/gateway/{route}", key, body, args.seconds)
                samples[name].append(rate * args.events)
        eps = {name: statistics.median(values) for name, values in samples.items()}
        print(f"{args.events} events per request, 16 connections, median of {args.rounds}")
        for name, rate in eps.items():
            print(f"  {name:26s} {rate:9,.0f} events/s  {rate / eps['floor']:.2f}x floor")
    finally:
        server.stop()
        receiver.terminate()
        receiver.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

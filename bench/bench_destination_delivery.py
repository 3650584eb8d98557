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

import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import httpx

from harness import Server, cli_enterprise_token, new_account, wire
from receivers import AZURITE_KEY, load_arguments, metric_events, post_json, replay, start_receiver


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
        for name, sink in destinations(receiver).items():
            _, route, key = wire(http, headers, name, [], sink)
            routes[name] = (route, key)
    return routes


def load(url: str, key: str, body: Path, seconds: float) -> float:
    return replay(
        [post_json(url, body.read_bytes(), {"Authorization": f"Token {key}"})], seconds
    ).rate


def main() -> int:
    args = load_arguments(__doc__, 5)
    work = Path(tempfile.mkdtemp(prefix="tidegate-bench-dest-"))
    receiver, base_receiver = start_receiver()
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
    body.write_bytes(json.dumps(metric_events(args.events)).encode())
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

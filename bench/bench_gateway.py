"""Benchmark: events per second through POST /gateway/{id} with a Throttle processor
and with a pipeline of five processors, against a route of the same server whose
pipeline has no processor (the floor).

    python bench/bench_gateway.py [--seconds 8] [--events 100]

Two set-ups, one server each (SQLite): in memory on one worker, and on Redis
(TIDEGATE_REDIS_URL) with four workers. Each server carries three routes, each feeding
its own pipeline: ``source -> blackhole`` (the floor), ``source -> throttle ->
blackhole``, and ``source -> parse -> filter -> map-fields -> throttle -> route ->
blackhole`` (five). The throttles are keyed on ``.app`` (100 distinct values) with a
limit no run reaches, so every event is decided and recorded and every request answers
200; the filter keeps every event and the route sends a tenth of them to a named
output, the rest to ``_unmatched`` (both wired to the blackhole). Load: wrk posting one
JSON array of ``--events`` events per request (32 connections). Needs wrk; the Redis
set-up needs Redis on 127.0.0.1:6379. Prints events/second per route (per worker with
several workers) and the ratios to the floor.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path

import httpx

from harness import (
    Server,
    api_data,
    cli_enterprise_token,
    new_account,
    wire,
)

REDIS_URL = os.environ.get("TIDEGATE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def wrk(url: str, key: str, body_file: Path, seconds: int, *, pin: bool) -> float:
    script = body_file.with_suffix(".lua")
    script.write_text(
        'wrk.method = "POST"\n'
        'wrk.headers["Content-Type"] = "application/json"\n'
        f'wrk.headers["Authorization"] = "Token {key}"\n'
        f'local f = io.open("{body_file}", "rb"); wrk.body = f:read("*a"); f:close()\n'
    )
    command = ["wrk", "-t1", "-c32", f"-d{seconds}s", "-s", str(script), url]
    if pin and shutil.which("taskset"):
        command = ["taskset", "-c", "1", *command]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    if "Non-2xx" in out:
        raise RuntimeError("non-2xx answers during the run:\n" + out)
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    assert rps, out
    return float(rps.group(1))


THROTTLE = {"threshold": 10**9, "window_ms": 3_600_000, "key_field": ".app"}
SERVER_ERROR = {
    "logical_operation": "AND",
    "expressions": [{"field": ".status", "str_operator": "greater_or_equal", "value": 500}],
}
# (type, user_config) of the five-processor pipeline, in order.
FIVE: list[tuple[str, dict[str, object]]] = [
    ("parse", {"field": ".line", "target_field": ".parsed", "parser": "json"}),
    (
        "filter",
        {
            "action": "allow",
            "conditional": {
                "expressions": [{"field": ".parsed.status", "str_operator": "exists", "value": ""}]
            },
        },
    ),
    (
        "map-fields",
        {
            "mappings": [
                {
                    "source_field": ".parsed.status",
                    "target_field": ".status",
                    "drop_source": True,
                    "overwrite": True,
                }
            ]
        },
    ),
    ("throttle", THROTTLE),
    (
        "route",
        {
            "conditionals": [
                {"conditional": SERVER_ERROR, "label": "Errors", "output_name": "errors"}
            ]
        },
    ),
]


def check(http: httpx.Client, headers: dict[str, str], pipeline: str, processors: int) -> None:
    """Every sample event reaches the blackhole through every processor (a mistyped
    configuration that dropped events would flatter the figures)."""
    sample = [{"line": json.dumps({"status": 200}), "app": "a"}] * 10
    nodes = api_data(
        http.post(f"/v3/pipeline/{pipeline}/simulate", json={"events": sample}, headers=headers)
    )["nodes"]
    assert len(nodes) == processors + 2, nodes
    assert all(node["received"] == 10 for node in nodes[1:]), nodes


def setup(base: str, token: str) -> dict[str, tuple[str, str]]:
    """Three routes: ``{"floor" | "throttle" | "five": (route_id, key)}``."""
    enterprise = {"Authorization": f"Token {token}"}
    with httpx.Client(base_url=base, timeout=30) as http:
        account = new_account(base, enterprise)
        headers = {**enterprise, "x-delegate-account-id": account}
        api_data(
            http.put(
                f"/v3/enterprise/account/{account}/features/throttle-processor", headers=enterprise
            )
        )
        routes: dict[str, tuple[str, str]] = {}
        steps = {"floor": [], "throttle": [("throttle", THROTTLE)], "five": FIVE}
        for name, processors in steps.items():
            pipeline, route, key = wire(http, headers, name, processors, ("blackhole", {}))
            check(http, headers, pipeline, len(processors))
            routes[name] = (route, key)
    return routes


def run(
    label: str, *, workers: int, redis: bool, seconds: int, rounds: int, body: Path
) -> dict[str, float]:
    work = Path(tempfile.mkdtemp(prefix="tidegate-bench-gw-"))
    env = {
        **os.environ,
        "TIDEGATE_DATABASE_URL": f"sqlite+aiosqlite:///{work / 'bench.sqlite3'}",
        "TIDEGATE_DATA_DIR": str(work / "var"),
        "TIDEGATE_BOOTSTRAP": "0",
        "TIDEGATE_RATE_LIMIT_PER_MINUTE": "0",
    }
    if redis:
        env["TIDEGATE_REDIS_URL"] = REDIS_URL
    else:
        env.pop("TIDEGATE_REDIS_URL", None)
    token = cli_enterprise_token(env)
    pin = workers == 1 and shutil.which("taskset") is not None
    server = Server(
        env, "--workers", str(workers), "--log-level", "warning",
        output=None, timeout=120, prefix=["taskset", "-c", "0"] if pin else [],
    )  # fmt: skip
    try:
        base = server.base
        routes = setup(base, token)
        events_per_request = len(json.loads(body.read_bytes()))
        for route, key in routes.values():
            wrk(f"{base}/gateway/{route}", key, body, 2, pin=pin)  # warm-up
        # Interleaved rounds, the median of each: the machine's load drifts over a run.
        samples: dict[str, list[float]] = {name: [] for name in routes}
        for _ in range(rounds):
            for name, (route, key) in routes.items():
                rate = wrk(f"{base}/gateway/{route}", key, body, seconds, pin=pin)
                samples[name].append(rate * events_per_request)
        eps = {name: statistics.median(values) for name, values in samples.items()}
        per = f" ({eps['floor'] / workers:.0f} /worker)" if workers > 1 else ""
        print(
            f"{label:<18} floor {eps['floor']:>7.0f} ev/s{per}   "
            + "   ".join(
                f"{name} {eps[name]:>7.0f} ev/s"
                + (f" ({eps[name] / workers:.0f} /worker)" if workers > 1 else "")
                + f" = {eps[name] / eps['floor']:.2f}x floor"
                for name in ("throttle", "five")
            ),
            flush=True,
        )
        return eps
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--events", type=int, default=100, help="events per request")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (median)")
    args = parser.parse_args()
    if not shutil.which("wrk"):
        print("bench: wrk is needed (apt-get install wrk)", file=sys.stderr)
        return 2
    body_dir = Path(tempfile.mkdtemp(prefix="tidegate-bench-body-"))
    body = body_dir / "events.json"
    body.write_text(
        json.dumps(
            [
                {
                    "line": json.dumps(
                        {"path": f"/item/{n}", "status": 500 if n % 10 == 0 else 200}
                    ),
                    "app": f"app-{n % 100}",
                    "host": "web-1",
                    "n": n,
                }
                for n in range(args.events)
            ]
        )
    )
    print(
        f"POST /gateway/{{id}}, {args.events} events per request, wrk -t1 -c32 "
        f"-d{args.seconds}s x {args.rounds} interleaved rounds (median), SQLite, "
        f"{os.cpu_count()} CPUs; destination blackhole"
    )
    measure = partial(run, seconds=args.seconds, rounds=args.rounds, body=body)
    try:
        measure("memory, 1 worker", workers=1, redis=False)
        try:
            import redis as redis_lib

            redis_lib.Redis.from_url(REDIS_URL).ping()
        except Exception as error:  # no Redis: skip its row
            print(f"redis, 4 workers: skipped ({error})")
        else:
            measure("redis, 4 workers", workers=4, redis=True)
    finally:
        shutil.rmtree(body_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

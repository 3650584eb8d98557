"""Benchmark: /healthz latency on a quiet server, then while other connections send the
attacks of issue 7 items 1-4 (not a test; it prints numbers).

    python bench/bench_health_under_attack.py [--quiet-s 5] [--attack-s 20]
        [--only regex,wildcard,stalled,empty-lines,gateway]

One real ``tidegate serve`` (SQLite, one worker). A probe thread sends GET /healthz
every 50 ms on its own connection (5 s client timeout; a timeout counts as 5 s). First
for ``--quiet-s`` seconds with nothing else going on, then for ``--attack-s`` seconds
while these run side by side, each in a loop on its own connection:

- regex: POST /v3/pipeline/simulate-processor, a filter with ``regex_match`` ``(a+)+$``
  on a field of ``--regex-len`` a's and a final ``!`` (item 1);
- wildcard: an exclusion rule with hosts ``["*a*a*a*a*b"]``, then ingestion from a
  200-character hostname of a's (item 2);
- stalled: 60 connections sending an unauthenticated 10 MB ingest body but its last
  byte, then nothing (item 3; opened once, held to the end);
- empty-lines: a 10 MB ingest body ``{"lines":[{},{},...]}`` (item 4);
- gateway: a gateway body of 1M ``{}`` (item 4).

Prints quiet and under-attack p50/p99 (and max), their ratio, the server's peak RSS
(VmHWM) before and after the attack, and the answers each attack got (status codes,
``timeout``, ``error``). It stops by itself after about a minute: the server is killed at
the end whatever it is doing. Numbers from a loaded machine vary; compare the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from harness import (
    Server,
    api_data,
    api_json,
    gateway_pipeline,
    ingestion_key,
    new_account,
    publish,
    status_kb,
)

PROBE_INTERVAL_S = 0.05
PROBE_TIMEOUT_S = 5.0
ATTACK_TIMEOUT_S = 10.0
TEN_MB = 10 * 1024 * 1024
ATTACKS = ("regex", "wildcard", "stalled", "empty-lines", "gateway")


def memory_kb(pid: int) -> dict[str, int]:
    try:
        return status_kb(pid, "VmRSS", "VmHWM")
    except OSError:
        return {}


class HealthServer(Server):
    """The server with its output in a log file of its work directory, killed at the end."""

    def __init__(self) -> None:
        self.work = Path(tempfile.mkdtemp(prefix="tidegate-bench-health-"))
        env = {
            **os.environ,
            "TIDEGATE_DATA_DIR": str(self.work / "var"),
            "TIDEGATE_RATE_LIMIT_PER_MINUTE": "0",
            "TIDEGATE_SQLITE_SYNCHRONOUS": "NORMAL",
        }
        self.log = (self.work / "server.log").open("wb")
        try:
            super().__init__(env, cwd=self.work, output=self.log, timeout=30)
        except RuntimeError:
            raise RuntimeError(f"server did not start; see {self.work / 'server.log'}") from None

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()
        self.log.close()


def set_up(server: HealthServer) -> dict[str, Any]:
    """An account with an ingestion key, the wildcard exclusion rule and a gateway route."""
    token = (server.work / "var" / "enterprise-key").read_text().strip()
    enterprise = {"Authorization": f"Token {token}"}
    with httpx.Client(base_url=server.base, timeout=30) as http:
        account = new_account(server.base, enterprise)
        headers = {**enterprise, "x-delegate-account-id": account}
        key = ingestion_key(server.base, headers)
        api_json(
            http.post(
                "/v1/config/ingestion/exclusions",
                json={"title": "wildcard", "active": True, "hosts": ["*a*a*a*a*b"]},
                headers=headers,
            )
        )
        pipeline, route, route_key, source = gateway_pipeline(http, headers, "bench")
        api_data(
            http.post(
                f"/v3/pipeline/{pipeline}/destination",
                json={"type": "blackhole", "inputs": [source]},
                headers=headers,
            )
        )
        publish(http, headers, pipeline)
    return {"headers": headers, "key": key, "route": route, "route_key": route_key}


class Probe(threading.Thread):
    """GET /healthz every PROBE_INTERVAL_S; latencies in seconds (a timeout counts as
    PROBE_TIMEOUT_S)."""

    def __init__(self, base: str) -> None:
        super().__init__(daemon=True)
        self.base = base
        self.stop = threading.Event()
        self.latencies: list[float] = []
        self.failures = Counter[str]()

    def run(self) -> None:
        with httpx.Client(timeout=PROBE_TIMEOUT_S) as http:
            while not self.stop.is_set():
                started = time.perf_counter()
                try:
                    status = http.get(self.base + "/healthz").status_code
                    if status != 200:
                        self.failures[str(status)] += 1
                except httpx.TimeoutException:
                    self.failures["timeout"] += 1
                except httpx.HTTPError as exc:
                    self.failures[type(exc).__name__] += 1
                self.latencies.append(time.perf_counter() - started)
                time.sleep(max(0.0, PROBE_INTERVAL_S - (time.perf_counter() - started)))


def probe_for(base: str, seconds: float) -> Probe:
    probe = Probe(base)
    probe.start()
    time.sleep(seconds)
    probe.stop.set()
    probe.join(PROBE_TIMEOUT_S + 1)
    return probe


class Attack(threading.Thread):
    """One request, sent again and again until stopped; counts the answers."""

    def __init__(self, name: str, send: Callable[[httpx.Client], httpx.Response]) -> None:
        super().__init__(daemon=True)
        self.name = name
        self.send = send
        self.stop = threading.Event()
        self.answers = Counter[str]()

    def run(self) -> None:
        with httpx.Client(timeout=ATTACK_TIMEOUT_S) as http:
            while not self.stop.is_set():
                try:
                    self.answers[str(self.send(http).status_code)] += 1
                except httpx.TimeoutException:
                    self.answers["timeout"] += 1
                except httpx.HTTPError as exc:
                    self.answers[f"error:{type(exc).__name__}"] += 1
                    time.sleep(0.1)


def attacks(server: HealthServer, ctx: dict[str, Any], regex_len: int) -> list[Attack]:
    base = server.base
    regex_body = {
        "processor": {
            "type": "filter",
            "user_config": {
                "condition": {"field": ".a", "str_operator": "regex_match", "value": "(a+)+$"}
            },
        },
        "events": [{"a": "a" * regex_len + "!"}],
    }
    empty_lines = b'{"lines":[' + b",".join([b"{}"] * ((TEN_MB - 32) // 3)) + b"]}"
    million = b"[" + b",".join([b"{}"] * 1_000_000) + b"]"
    json_type = {"Content-Type": "application/json"}
    return [
        Attack(
            "regex",
            lambda http: http.post(
                f"{base}/v3/pipeline/simulate-processor", json=regex_body, headers=ctx["headers"]
            ),
        ),
        Attack(
            "wildcard",
            lambda http: http.post(
                f"{base}/logs/ingest",
                params={"hostname": "a" * 200, "apikey": ctx["key"]},
                json={"lines": [{"line": "hello"}]},
            ),
        ),
        Attack(
            "empty-lines",
            lambda http: http.post(
                f"{base}/logs/ingest",
                params={"hostname": "bench", "apikey": ctx["key"]},
                content=empty_lines,
                headers=json_type,
            ),
        ),
        Attack(
            "gateway",
            lambda http: http.post(
                f"{base}/gateway/{ctx['route']}",
                content=million,
                headers={**json_type, "Authorization": f"Token {ctx['route_key']}"},
            ),
        ),
    ]


class Stall(threading.Thread):
    """``count`` connections each sending a 10 MB unauthenticated body but its last
    byte, then holding the connection open until the end."""

    def __init__(self, server: HealthServer, count: int = 60) -> None:
        super().__init__(daemon=True)
        self.server = server
        self.count = count
        self.stop = threading.Event()
        self.sockets: list[socket.socket] = []
        self.answers = Counter[str]()

    def run(self) -> None:
        head = (
            f"POST /logs/ingest?hostname=stall HTTP/1.1\r\nHost: bench\r\n"
            f"Content-Type: application/json\r\nContent-Length: {TEN_MB}\r\n\r\n"
        ).encode()
        body = b"x" * (TEN_MB - 1)
        for _ in range(self.count):
            if self.stop.is_set():
                break
            try:
                # A frozen server stops reading: give up on a connection after a while.
                sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=2)
                self.sockets.append(sock)
                sock.sendall(head + body)
                self.answers["sent"] += 1
            except OSError as exc:
                self.answers[f"error:{type(exc).__name__}"] += 1
        for sock in self.sockets:
            if self.stop.is_set():
                break
            sock.settimeout(0.2)
            try:
                line = sock.recv(64).split(b"\r\n", 1)[0].decode("latin-1")
                self.answers[line.split(" ")[1] if " " in line else "closed"] += 1
            except TimeoutError:
                self.answers["no answer"] += 1
            except OSError as exc:
                self.answers[f"error:{type(exc).__name__}"] += 1

    def close(self) -> None:
        self.stop.set()
        for sock in self.sockets:
            sock.close()


def quantiles(values: list[float]) -> tuple[float, float, float]:
    if len(values) < 2:
        only = values[0] if values else float("nan")
        return only, only, only
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return cuts[49], cuts[98], max(values)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quiet-s", type=float, default=5.0)
    parser.add_argument("--attack-s", type=float, default=20.0)
    parser.add_argument("--regex-len", type=int, default=26)
    parser.add_argument(
        "--only",
        default=",".join(ATTACKS),
        help="comma-separated attacks to run (default: all of them)",
    )
    args = parser.parse_args()
    chosen = set(args.only.split(","))
    if not chosen <= set(ATTACKS):
        parser.error(f"--only takes some of {', '.join(ATTACKS)}")
    print("starting a server, then a quiet phase and an attack phase...", file=sys.stderr)

    server = HealthServer()
    stall = Stall(server)
    try:
        ctx = set_up(server)
        pid = server.process.pid
        quiet = probe_for(server.base, args.quiet_s)
        memory_before = memory_kb(pid)

        running = [a for a in attacks(server, ctx, args.regex_len) if a.name in chosen]
        probe = Probe(server.base)
        probe.start()
        for attack in running:
            attack.start()
        if "stalled" in chosen:
            stall.start()
        started = time.monotonic()
        peak_rss = 0
        while time.monotonic() - started < args.attack_s:
            peak_rss = max(peak_rss, memory_kb(pid).get("VmRSS", 0))
            time.sleep(0.2)
        memory_after = memory_kb(pid)
        probe.stop.set()
        for attack in running:
            attack.stop.set()
        probe.join(PROBE_TIMEOUT_S + 1)
    finally:
        server.stop()
        stall.close()

    q50, q99, qmax = quantiles(quiet.latencies)
    a50, a99, amax = quantiles(probe.latencies)
    ms = 1000.0
    print("GET /healthz latency, one worker, SQLite (loaded machine: compare the ratio)")
    print(f"{'':16}{'requests':>10}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}  failures")
    print(
        f"{'quiet':16}{len(quiet.latencies):>10}{q50 * ms:>10.1f}{q99 * ms:>10.1f}"
        f"{qmax * ms:>10.1f}  {dict(quiet.failures) or '-'}"
    )
    print(
        f"{'under attack':16}{len(probe.latencies):>10}{a50 * ms:>10.1f}{a99 * ms:>10.1f}"
        f"{amax * ms:>10.1f}  {dict(probe.failures) or '-'}"
    )
    print(f"{'ratio':16}{'':>10}{a50 / q50:>10.1f}{a99 / q99:>10.1f}{amax / qmax:>10.1f}")
    print()
    mb = 1 / 1024
    print(
        f"server RSS: {memory_before.get('VmRSS', 0) * mb:.0f} MB before the attack, "
        f"peak {memory_after.get('VmHWM', 0) * mb:.0f} MB (VmHWM; sampled VmRSS peak "
        f"{peak_rss * mb:.0f} MB)"
    )
    print("attack answers (status code: count):")
    for attack in running:
        print(f"  {attack.name:12} {json.dumps(dict(attack.answers))}")
    if "stalled" in chosen:
        print(f"  {'stalled x60':12} {json.dumps(dict(stall.answers))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

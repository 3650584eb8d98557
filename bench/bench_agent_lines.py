"""Benchmark: the CPU a worker thread spends on one ingest body of the platform agent's
shape and of a logging library's (inflate, parse, build the records, judge them against
no rules, build the rows), in process, no database.

    python bench/bench_agent_lines.py [--lines 100] [--repeat 2000]

Run it with another checkout's ``src`` first on ``PYTHONPATH`` to compare (the
function it times, ``ingest.service.prepare``, has the same signature since issue 8).
Prints CPU microseconds per body and per line, best of five runs.
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
import timeit

from tidegate.ingest import service
from tidegate.logs.exclusion import RuleSet


def agent_body(lines: int, now_s: int) -> bytes:
    """What logdna-rust posts: file lines, half with Kubernetes labels and a node host."""
    items = []
    for n in range(lines):
        item: dict[str, object] = {
            "file": f"/var/log/containers/web-{n % 7}_default_nginx-{n:016x}.log",
            "line": f'10.0.0.{n % 250} - - "GET /item/{n} HTTP/1.1" 200 {600 + n}',
            "timestamp": now_s,
        }
        if n % 2:
            item = {
                "annotation": {"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"},
                **item,
                "host": "node-7",
                "label": {"app": "web", "tier": "edge"},
                "meta": {"Image Name": "nginx", "Tag": "1.27"},
            }
        items.append(item)
    return gzip.compress(json.dumps({"lines": items}).encode(), compresslevel=2)


def library_body(lines: int, now_ms: int) -> bytes:
    """What @logdna/logger posts: ms timestamps, app, level, meta (half unindexed)."""
    items = [
        {
            "timestamp": now_ms + n,
            "line": f"order {n} paid",
            "level": "INFO",
            "app": "shop",
            "meta": (
                {"order": n, "customer": {"tier": "gold"}}
                if n % 2
                else json.dumps({"order": n, "customer": {"tier": "gold"}})
            ),
        }
        for n in range(lines)
    ]
    return json.dumps({"e": "ls", "ls": items}).encode()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=2000)
    args = parser.parse_args()
    now_ms = time.time_ns() // 1_000_000
    cases = (
        ("agent (gzip, seconds)", agent_body(args.lines, now_ms // 1000), "gzip", now_ms // 1000),
        ("library (ms, meta)", library_body(args.lines, now_ms), None, now_ms),
    )
    for name, body, encoding, now in cases:
        params = service.check_params(
            hostname="bench", mac=None, ip=None, now=str(now), tags=("k8s",)
        )

        def run(
            body: bytes = body, encoding: str | None = encoding, params: object = params
        ) -> None:
            service.prepare(
                account_id="a",
                params=params,  # type: ignore[arg-type]
                body=body,
                content_encoding=encoding,
                rules=RuleSet(()),
                received_ms=now_ms,
            )

        # CPU time of this process: the machine is shared, wall time is not the cost.
        best = (
            min(timeit.repeat(run, number=args.repeat, repeat=5, timer=time.process_time))
            / args.repeat
        )
        print(f"{name:24} {best * 1e6:8.1f} us/body {best * 1e6 / args.lines:6.2f} us/line")


if __name__ == "__main__":
    main()

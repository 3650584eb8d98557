"""Benchmark: GET /v3/enterprise/account/{id} with authentication, one worker, beside
floors on the same server (uvicorn, uvloop, httptools), in one run:

- ``fastapi+driver``: a FastAPI route doing the same credential lookup and account read
  with the raw driver (stdlib sqlite3, or asyncpg) and returning the same JSON
  (bench/bare_app.py; the bodies are checked equal before timing);
- ``bare ASGI``: the same bytes from a bare ASGI app;
- ``tidegate``: ``tidegate serve`` from this checkout (and, with ``--compare-src DIR``,
  another checkout's ``src`` as ``tidegate@DIR``, e.g. the code before a change).

    python bench/bench_account_read.py [--database sqlite|postgres] [--seconds 5]

Needs `wrk` (Debian package). Servers are pinned to CPU 0 and wrk to CPU 1 when
`taskset` is present. The rate limiter stays on, with a ceiling no run can reach, so
its cost is measured too. Prints requests/second, p50 and p99 latency, and the server
process's CPU time per request (utime + stime from /proc/<pid>/stat over the run,
divided by the requests wrk completed), and ratios against the FastAPI floor.
"""

from __future__ import annotations

import json
import sys

import httpx

from harness import (
    CPU_HEADER,
    SideBySide,
    cli_enterprise_token,
    cpu_row,
    have_wrk,
    side_by_side_args,
    wrk,
)


def main() -> int:
    parser = side_by_side_args(__doc__, seconds=5)
    args = parser.parse_args()
    if not have_wrk():
        return 2

    results: dict[str, list[dict[str, float]]] = {}
    with SideBySide(args.database) as run:
        headers = {"Authorization": f"Token {cli_enterprise_token(run.env)}"}
        base = run.tidegate("tidegate")
        account = httpx.post(
            base + "/v3/enterprise/account",
            json={"company": "Bench", "owneremail": "bench@example.com"},
            headers=headers,
        ).json()["data"]
        path = f"/v3/enterprise/account/{account['account_id']}"
        body = httpx.get(base + path, headers=headers).content
        (run.work / "body.json").write_bytes(body)
        for name, app in (("fastapi+driver", "fastapi_floor"), ("bare ASGI", "asgi_floor")):
            run.floor(name, app, BENCH_BODY_FILE=str(run.work / "body.json"))
        if args.compare_src:
            run.tidegate(f"tidegate@{args.compare_src}", args.compare_src)
        for name in run.servers:
            answer = httpx.get(run.url(name, path), headers=headers).content
            if json.loads(answer) != json.loads(body):
                raise RuntimeError(f"{name} answers differently:\n{answer!r}\n{body!r}")
            wrk(run.url(name, path), headers, 1, run.pid(name))  # warm-up
            results[name] = []
        for _ in range(args.rounds):
            for name in run.servers:
                results[name].append(wrk(run.url(name, path), headers, args.seconds, run.pid(name)))

    # Best round by CPU per request: the least disturbed by other load on the machine.
    best = {name: min(runs, key=lambda r: r["cpu_ms"]) for name, runs in results.items()}
    print(
        f"GET /v3/enterprise/account/{{id}}, authenticated, 1 worker, {args.database}, "
        f"wrk -t1 -c32 -d{args.seconds}s, best of {args.rounds} (by CPU per request)"
    )
    floor = best["fastapi+driver"]["cpu_ms"]
    print(f"{'target':<28} {CPU_HEADER}")
    for name, r in best.items():
        print(f"{name:<28} {cpu_row(r, floor)}")
    print("x floor: CPU per request over the FastAPI+driver floor's (aim <= 2.0)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

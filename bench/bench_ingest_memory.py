"""Benchmark: a worker's peak memory and loop latency under the ingest attack bodies of
issue 7 (item 4), against a real ``tidegate serve`` process (SQLite, one worker).

    python bench/bench_ingest_memory.py [--baseline-src /path/to/old/src]

For each body it resets the server's peak-RSS counter (``/proc/<pid>/clear_refs``),
sends the body, and reads ``VmHWM`` (peak resident set) and the CPU time the server
spent; meanwhile another thread polls ``/healthz`` and reports its worst latency (the
event loop is free when that stays in milliseconds). ``--baseline-src`` runs the same
bodies against another checkout's ``src`` in the same run (e.g. the code before the fix:
``git archive <rev> src | tar -x -C /tmp/old``), side by side. Numbers depend on the
machine and its load; they are not pass/fail.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import gzip
import os
import tempfile
import threading
import time
from pathlib import Path

import httpx

from harness import (
    Server,
    cpu_seconds,
    db_enterprise_token,
    ingestion_key,
    new_account,
    status_kb,
)


class MemoryServer(Server):
    """The server with its worker processes: peak RSS and CPU over all of them."""

    def __init__(self, workdir: Path, src: str | None) -> None:
        self.url = f"sqlite+aiosqlite:///{workdir / 'bench.sqlite3'}"
        env = {
            **os.environ,
            "TIDEGATE_DATABASE_URL": self.url,
            "TIDEGATE_DATA_DIR": str(workdir / "var"),
            "TIDEGATE_SECRET_KEY": "bench",
            "TIDEGATE_BOOTSTRAP": "0",
            "TIDEGATE_RATE_LIMIT_PER_MINUTE": "0",
        }
        if src:
            env["PYTHONPATH"] = src
        super().__init__(env, cwd=workdir)

    def pids(self) -> list[int]:
        found = [self.process.pid]
        for pid in found:
            for task in Path(f"/proc/{pid}/task").iterdir():
                children = (task / "children").read_text().split()
                found.extend(int(child) for child in children if int(child) not in found)
        return found

    def reset_peak(self) -> None:
        for pid in self.pids():
            Path(f"/proc/{pid}/clear_refs").write_text("5")

    def peak_mb(self) -> float:
        return max(status_kb(pid, "VmHWM").get("VmHWM", 0) for pid in self.pids()) / 1024

    def cpu_s(self) -> float:
        return cpu_seconds(*self.pids())


def make_ingestion_key(server: MemoryServer) -> str:
    enterprise = {"Authorization": f"Token {asyncio.run(db_enterprise_token(server.url))}"}
    account_id = new_account(server.base, enterprise)
    return ingestion_key(server.base, {**enterprise, "x-delegate-account-id": account_id})


def bodies() -> list[tuple[str, bytes, dict[str, str], int]]:
    """(name, body, extra headers, concurrent copies)."""
    empty = b'{"lines": [' + b",".join([b'{"line":""}'] * 873_811) + b"]}"
    objects = b'{"lines": [' + b",".join([b"{}"] * 3_400_000) + b"]}"
    line = b'{"line":"GET /api/v1/items/1 status=200 took 12ms user=u1","app":"web","level":"INFO"}'
    at_cap = b'{"lines": [' + b",".join([line] * 100_000) + b"]}"
    return [
        ("873,811 empty lines (10 MB)", empty, {}, 1),
        ("3.4M {} elements (10 MB)", objects, {}, 1),
        ("the empty lines, gzip", gzip.compress(empty), {"content-encoding": "gzip"}, 1),
        ("100,000 real lines (at the cap, stored)", at_cap, {}, 1),
        ("4 x empty lines at once", empty, {}, 4),
    ]


def health_watch(base: str, stop: threading.Event, worst: list[float]) -> None:
    with httpx.Client(timeout=60) as client:
        while not stop.is_set():
            started = time.perf_counter()
            client.get(base + "/healthz")
            worst.append(time.perf_counter() - started)
            time.sleep(0.02)


def run(label: str, src: str | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server = MemoryServer(Path(tmp), src)
        try:
            key = make_ingestion_key(server)
            headers = {"apikey": key, "content-type": "application/json"}
            url = f"{server.base}/logs/ingest?hostname=bench"
            httpx.post(url, content=b'{"lines":[{"line":"warm"}]}', headers=headers)
            print(f"\n{label}")
            print(
                f"{'body':<42}{'status':>10}{'peak RSS MB':>13}{'CPU s':>8}{'wall s':>8}"
                f"{'health max ms':>15}"
            )
            for name, body, extra, copies in bodies():
                time.sleep(0.5)
                server.reset_peak()
                cpu = server.cpu_s()
                stop, worst = threading.Event(), [0.0]
                watcher = threading.Thread(target=health_watch, args=(server.base, stop, worst))
                watcher.start()
                started = time.perf_counter()

                def send(body: bytes = body, extra: dict[str, str] = extra) -> int:
                    return httpx.post(
                        url, content=body, headers={**headers, **extra}, timeout=300
                    ).status_code

                with concurrent.futures.ThreadPoolExecutor(copies) as pool:
                    statuses = list(pool.map(lambda _n: send(), range(copies)))
                wall = time.perf_counter() - started
                stop.set()
                watcher.join()
                print(
                    f"{name:<42}{'/'.join(map(str, sorted(set(statuses)))):>10}"
                    f"{server.peak_mb():>13.0f}{server.cpu_s() - cpu:>8.2f}{wall:>8.2f}"
                    f"{max(worst) * 1000:>15.0f}"
                )
        finally:
            server.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline-src", help="another checkout's src to compare against")
    args = parser.parse_args()
    print("Peak RSS is the server process's VmHWM during that body (reset before each).")
    print("Machine shared with other jobs: figures are indicative.")
    run("this checkout", os.environ.get("PYTHONPATH"))
    if args.baseline_src:
        run(f"baseline: {args.baseline_src}", args.baseline_src)


if __name__ == "__main__":
    main()

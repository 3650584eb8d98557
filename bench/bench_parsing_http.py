"""Benchmark: what parsing lines into fields costs on the whole ingestion path, through
real HTTP, against the same server with parsing off and the database driver's floor.

    python bench/bench_parsing_http.py [--seconds 10] [--databases sqlite,postgres]
        [--rounds 1] [--compare-src /path/to/other/checkout/src]

The requests are the agent's (logdna-agent-v2, ``shared/spec/clients.md``): ``POST
/logs/agent?hostname=&mac=&ip=&now=<epoch s>&tags=`` with an ``apiKey`` header and a
gzip JSON body of 100 lines, each ``{"file", "line", "timestamp"}`` (seconds) as the
agent sends lines it reads from files; 20 different bodies in turn (2,000 lines of the
corpus of bench/bench_line_parsing.py: half JSON, the rest plain text with levels,
logfmt, Apache combined, nginx error, syslog and plain sentences). ``wrk`` (Debian
package; 2 threads, 8 connections) sends them to a real ``tidegate serve`` with one
worker, for ``--seconds`` per cell. Cells, per backend:

- **parsing**: the server as it is;
- **no parsing**: the same server with ``logs.intake.parse_line`` replaced by the
  identity (bench/serve_without_parsing.py): every line stored plain;
- **floor, parsed rows** / **floor, plain rows**: the store's own write of the same
  rows (``sqlite_write``: ``executemany`` on a stdlib connection with the server's
  pragmas; ``pg_write``: binary COPY on asyncpg), 5,000 lines per transaction, no HTTP,
  no JSON, no parsing: the rows each server cell built.

``--compare-src DIR``: the same cells for another checkout's ``src`` (e.g. ``main``'s),
each tree on a database of its own migrated by it, the trees' servers taking turns
cell by cell (``--rounds`` times, the least CPU of each cell kept), and each tree's
floors from the rows it built.

Reported: lines/s, CPU per 1,000 lines of the server (every thread of its one process,
user + system, from /proc) or of the floor's process, and on PostgreSQL of the
backends connected to the benchmark's database (not PostgreSQL's background processes,
nor other databases' work: the machine's server is shared), and the ratios: parsing against
no parsing, and each against its floor.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import pickle
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx

import tidegate.logs.intake as intake
from bench_ingest import FLOOR_TX_LINES, Cell, pg_floor, postgres_cpu, sqlite_floor
from bench_line_parsing import corpus
from harness import (
    Server,
    cpu_seconds,
    create_pg_database,
    db_enterprise_token,
    drop_pg_database,
    ingestion_key,
    new_account,
    server_env,
)
from tidegate.db.migrate import upgrade_database
from tidegate.ingest.service import IngestParams, prepare
from tidegate.logs.exclusion import EMPTY
from tidegate.logs.store import StoreBatch

BATCH = 100
BODIES = 20
CONNECTIONS = 8
HOSTNAME = "node-1"
FILES = ["/var/log/containers/web.log", "/var/log/nginx/access.log", "/var/log/syslog"]
WITHOUT_PARSING = str(Path(__file__).with_name("serve_without_parsing.py"))


def agent_lines(now_s: int) -> list[list[dict[str, Any]]]:
    """``BODIES`` bodies' lines, as the agent writes them (key order of logdna-rust)."""
    texts = corpus(BATCH * BODIES)
    lines = [
        {"file": FILES[n % len(FILES)], "line": text, "timestamp": now_s}
        for n, text in enumerate(texts)
    ]
    return [lines[start : start + BATCH] for start in range(0, len(lines), BATCH)]


def agent_query(now_s: int) -> str:
    return "/logs/agent?" + urlencode(
        {"hostname": HOSTNAME, "mac": "02:42:ac:11:00:02", "ip": "10.0.0.7", "now": now_s,
         "tags": "k8s,bench"}
    )  # fmt: skip


LUA = """
local bodies = {}
for i = 1, %(count)d do
  local file = io.open("%(dir)s/body" .. i .. ".gz", "rb")
  bodies[i] = file:read("*a")
  file:close()
end
local headers = {
  ["Accept-Charset"] = "utf8",
  ["Content-Type"] = "application/json",
  ["Content-Encoding"] = "gzip",
  ["User-Agent"] = "logdna-agent/3.9.1 (Linux/6.8.0)",
  ["apiKey"] = "%(key)s",
}
local turn = 0
request = function()
  turn = turn %% %(count)d + 1
  return wrk.format("POST", "%(path)s", headers, bodies[turn])
end
"""


def run_wrk(base: str, script: Path, seconds: int) -> tuple[int, int]:
    """(lines acknowledged, non-2xx answers)."""
    out = subprocess.run(
        ["wrk", "-t2", f"-c{CONNECTIONS}", f"-d{seconds}s", "-s", str(script), base],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    total = re.search(r"(\d+) requests in", out)
    assert total, out
    non_2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    failed = int(non_2xx.group(1)) if non_2xx else 0
    return (int(total.group(1)) - failed) * BATCH, failed


def tree_env(env: dict[str, str], src: str | None) -> dict[str, str]:
    """``env`` running the tidegate of ``src`` (another checkout's ``src``; None: this
    one's), writing no bytecode into it."""
    if src is None:
        return env
    return {**env, "PYTHONPATH": src, "PYTHONDONTWRITEBYTECODE": "1"}


def http_cell(
    url: str,
    workdir: Path,
    token: str,
    seconds: int,
    *,
    parsing: bool,
    database: str | None,
    src: str | None = None,
) -> tuple[Cell, str]:
    """One server (parsing on or off; the tidegate of ``src``), one new account: the
    cell and the account."""
    prefix = () if parsing else (sys.executable, WITHOUT_PARSING)
    server = Server(tree_env(server_env(url, workdir), src), "--workers", "1", prefix=prefix)
    try:
        enterprise = {"Authorization": f"Token {token}"}
        account_id = new_account(server.base, enterprise)
        headers = {**enterprise, "x-delegate-account-id": account_id}
        key = ingestion_key(server.base, headers)
        now_s = int(time.time())
        bodies = workdir / ("parsed" if parsing else "plain")
        bodies.mkdir(exist_ok=True)
        for number, lines in enumerate(agent_lines(now_s), 1):
            raw = json.dumps({"lines": lines}, separators=(",", ":")).encode()
            (bodies / f"body{number}.gz").write_bytes(gzip.compress(raw, compresslevel=2))
        script = bodies / "agent.lua"
        script.write_text(
            LUA % {"count": BODIES, "dir": bodies, "key": key, "path": agent_query(now_s)}
        )
        run_wrk(server.base, script, 1)  # warm the worker's caches
        postgres = url.startswith("postgresql")
        cpu, db_cpu = cpu_seconds(server.pid), postgres_cpu(database) if postgres else 0.0
        lines, failed = run_wrk(server.base, script, seconds)
        used = cpu_seconds(server.pid) - cpu
        db_used = (postgres_cpu(database) - db_cpu) / lines * 1e6 if postgres else None
        check_parsed(server.base, headers, now_s, parsing=parsing)
        return Cell(lines / seconds, used / lines * 1e6, db_used, failed), account_id
    finally:
        server.stop()


def check_parsed(base: str, headers: dict[str, str], now_s: int, *, parsing: bool) -> None:
    """The cell stored what it says: a parsed field (``status:503``, the corpus's JSON
    and logfmt lines) finds lines, at the agent's time, only when parsing was on."""
    window = {"from": now_s - 600, "to": now_s + 600, "size": 10}
    found = httpx.get(
        f"{base}/v2/export", params={**window, "query": "status:503"}, headers=headers, timeout=60
    )
    found.raise_for_status()
    if bool(found.json()["lines"]) != parsing:
        raise RuntimeError(
            f"status:503 found {len(found.json()['lines'])} lines, parsing {parsing}"
        )


@contextmanager
def parser_off() -> Iterator[None]:
    """This process's ingestion without parsing, as serve_without_parsing.py's."""
    kept = intake.parse_line
    intake.parse_line = lambda line, templates=None: line  # type: ignore[assignment]
    try:
        yield
    finally:
        intake.parse_line = kept  # type: ignore[assignment]


def floor_batch(account_id: str, *, parsing: bool) -> StoreBatch:
    """The first body's rows as the server builds them (``ingest.service.prepare``)."""
    now_s = int(time.time())
    raw = json.dumps({"lines": agent_lines(now_s)[0]}).encode()
    params = IngestParams(hostname=HOSTNAME, now=now_s, tags=("k8s", "bench"))
    with parser_off() if not parsing else nullcontext():
        judged = prepare(
            account_id=account_id, params=params, body=raw, content_encoding=None,
            rules=EMPTY, received_ms=now_s * 1000,
        )  # fmt: skip
    assert judged.batch is not None
    assert len(judged.batch.rows) == BATCH
    return judged.batch


@dataclass
class Row:
    name: str
    cell: Cell
    floor: Cell | None = None


def floor_batch_of(src: str, account_id: str, *, parsing: bool, workdir: Path) -> StoreBatch:
    """``floor_batch`` as the tidegate of ``src`` builds it (in a process of its own)."""
    out = workdir / "floor-batch.pickle"
    script = (
        "import pickle, sys; sys.path.insert(0, sys.argv[1]); "
        "from bench_parsing_http import floor_batch; "
        "b = floor_batch(sys.argv[2], parsing=sys.argv[3] == '1'); "
        "open(sys.argv[4], 'wb').write(pickle.dumps("
        "(b.account_id, b.received_ms, b.rows, b.lines_stored, b.bytes_stored)))"
    )
    bench = str(Path(__file__).resolve().parent)
    flag = "1" if parsing else "0"
    command = [sys.executable, "-c", script, bench, account_id, flag, str(out)]
    subprocess.run(command, env=tree_env(dict(os.environ), src), check=True)
    account, received_ms, rows, stored, size = pickle.loads(out.read_bytes())
    return StoreBatch(account, received_ms, rows, stored, size)


@dataclass
class Tree:
    """A checkout to measure: its name and ``src`` (None: this one)."""

    name: str
    src: str | None = None


def migrate(url: str, tree: Tree, workdir: Path) -> None:
    """The database brought to the schema of ``tree``'s tidegate."""
    if tree.src is None:
        asyncio.run(upgrade_database(url))
        return
    env = tree_env(server_env(url, workdir), tree.src)
    command = [sys.executable, "-m", "tidegate", "db", "upgrade"]
    subprocess.run(command, env=env, check=True, capture_output=True)


def bench_backend(
    backend: str, seconds: int, workdir: Path, trees: list[Tree], rounds: int
) -> dict[str, list[Row]]:
    """Each tree's cells on a database of its own, the trees taking turns cell by cell,
    ``rounds`` times (the least CPU of each cell kept); then each tree's floors."""
    urls: dict[str, str] = {}
    pg_names: dict[str, str] = {}
    for number, tree in enumerate(trees):
        if backend == "sqlite":
            urls[tree.name] = f"sqlite+aiosqlite:///{workdir / f'bench{number}.sqlite3'}"
        else:
            pg_names[tree.name] = asyncio.run(create_pg_database())
            urls[tree.name] = f"postgresql+asyncpg://postgres@127.0.0.1:5432/{pg_names[tree.name]}"
    try:
        tokens = {}
        for tree in trees:
            migrate(urls[tree.name], tree, workdir)
            tokens[tree.name] = asyncio.run(db_enterprise_token(urls[tree.name]))
        cells: dict[tuple[str, bool], Cell] = {}
        accounts: dict[str, str] = {}
        for _round in range(rounds):
            for parsing in (True, False):
                for tree in trees:
                    cell, account_id = http_cell(
                        urls[tree.name],
                        workdir,
                        tokens[tree.name],
                        seconds,
                        parsing=parsing,
                        database=pg_names.get(tree.name),
                        src=tree.src,
                    )
                    accounts.setdefault(tree.name, account_id)
                    kept = cells.get((tree.name, parsing))
                    if kept is None or _total(cell) < _total(kept):
                        cells[tree.name, parsing] = cell
        floors: dict[tuple[str, bool], Cell] = {}
        for tree in trees:
            for parsing in (True, False):
                account_id = accounts[tree.name]
                batch = (
                    floor_batch(account_id, parsing=parsing)
                    if tree.src is None
                    else floor_batch_of(tree.src, account_id, parsing=parsing, workdir=workdir)
                )
                url = urls[tree.name]
                floors[tree.name, parsing] = (
                    sqlite_floor(
                        url.removeprefix("sqlite+aiosqlite:///"), account_id, seconds, batch
                    )
                    if backend == "sqlite"
                    else asyncio.run(pg_floor(url, account_id, seconds, batch, pg_names[tree.name]))
                )
    finally:
        for name in pg_names.values():
            asyncio.run(drop_pg_database(name))
    return {
        tree.name: [
            Row("parsing", cells[tree.name, True], floors[tree.name, True]),
            Row("no parsing", cells[tree.name, False], floors[tree.name, False]),
            Row("floor, parsed rows", floors[tree.name, True]),
            Row("floor, plain rows", floors[tree.name, False]),
        ]
        for tree in trees
    }


def _total(cell: Cell) -> float:
    return cell.cpu_ms + (cell.db_cpu_ms or 0.0)


def table(backend: str, rows: list[Row]) -> list[str]:
    out = []
    for item in rows:
        cell = item.cell
        db = f"{cell.db_cpu_ms:8.1f}" if cell.db_cpu_ms is not None else f"{'-':>8}"
        total = cell.cpu_ms + (cell.db_cpu_ms or 0.0)
        if item.floor is not None:
            floor_total = item.floor.cpu_ms + (item.floor.db_cpu_ms or 0.0)
            vs_floor = f"{total / floor_total:8.2f}"
        else:
            vs_floor = f"{'-':>8}"
        out.append(
            f"| {backend:<8} | {item.name:<18} | {cell.lines_per_s:>9,.0f} | {cell.cpu_ms:>8.1f} "
            f"| {db} | {total:>8.1f} | {vs_floor} | {cell.failed:>7} |"
        )
    parsed, plain = rows[0].cell, rows[1].cell
    on = parsed.cpu_ms + (parsed.db_cpu_ms or 0.0)
    off = plain.cpu_ms + (plain.db_cpu_ms or 0.0)
    out.append(
        f"| {backend:<8} | {'parsing / none':<18} | {'':>9} | {parsed.cpu_ms / plain.cpu_ms:>8.2f} "
        f"| {'':>8} | {on / off:>8.2f} | {'':>8} | {'':>7} |"
    )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--databases", default="sqlite,postgres")
    parser.add_argument("--rounds", type=int, default=1, help="cells run this many times")
    parser.add_argument(
        "--compare-src", type=Path, help="another checkout's src/ to measure beside this one"
    )
    args = parser.parse_args()
    trees = [Tree("this tree")]
    if args.compare_src is not None:
        trees.append(Tree(str(args.compare_src), str(args.compare_src.resolve())))
    print(
        f"POST /logs/agent as logdna-agent-v2 sends it (gzip, {BATCH} lines a request, "
        f"half JSON), wrk -t2 -c{CONNECTIONS}, {args.seconds}s a cell, one worker; floor: "
        f"the store's write of the same rows, {FLOOR_TX_LINES} lines a transaction, no "
        "HTTP. CPU: ms per 1,000 lines (server: the tidegate process, or the floor's; "
        "db: the backends of its PostgreSQL database; total: both); x floor: against the floor of "
        "the same rows; the last row of each backend: parsing against no parsing."
        + (
            f" Trees taking turns cell by cell, best of {args.rounds} (least total CPU)."
            if len(trees) > 1 or args.rounds > 1
            else ""
        )
    )
    name_width = max(len(tree.name) for tree in trees)
    print(f"| {'tree':<{name_width}} | backend  | cell               |   lines/s |   server "
          "|       db |    total |  x floor | non-2xx |")  # fmt: skip
    print(f"|{'-' * (name_width + 2)}|----------|--------------------|-----------|----------"
          "|----------|----------|----------|---------|")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        for backend in args.databases.split(","):
            measured = bench_backend(backend.strip(), args.seconds, Path(tmp), trees, args.rounds)
            for tree in trees:
                for line in table(backend, measured[tree.name]):
                    print(f"| {tree.name:<{name_width}} {line}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

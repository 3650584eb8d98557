"""Benchmark: what parsing lines into fields costs at ingestion, side by side in one run.

    python bench/bench_line_parsing.py [--lines 20000] [--batch 1000] [--repeat 3]
        [--compare-src /path/to/other/checkout/src]

A corpus where half the lines are JSON (Kubernetes-style objects, some after a text
prefix) and the rest plain text with a level, logfmt, Apache combined, nginx error and
syslog lines. Three cells, each the CPU (``time.process_time`` of this process, which
runs SQLite itself, so the database's work is included) per 1,000 lines, best of
``--repeat`` runs, written in transactions of ``--batch`` lines to a migrated SQLite
file:

- **parsing**: the ingestion path from the request body on: decode the body
  (``body_lines``), build the lines (``build_line``), ``judge_lines`` (which parses),
  the rows (``line_rows``), ``sqlite_write`` (lines, search index, usage);
- **no parsing**: the same with ``judge_lines(parse=False)``;
- **5 templates**: parsing with five active custom parsing templates
  (``TEMPLATES``) that no line of the corpus matches (the worst case: every line tries
  all five, then the built-in forms), and **5 templates, 1 in 12 match**: the same with
  the fifth one matching the corpus's plain "user N signed in" lines (``--templates 0``
  leaves both out);
- **floor**: plain ``executemany`` of the same rows into ``log_lines`` and
  ``log_search``, nothing else: once with the rows the parsing cell built (meta holding
  the parsed fields, a longer search text) and once with those of the cell without.

The start-up heap is frozen before the cells run, as a served worker freezes its own
(``tidegate.app.freeze_start_up_heap``), in both trees alike.

``--compare-src DIR``: the cells of this tree and of another checkout's ``src`` (e.g.
``main``'s), each in a process of its own, the two taking turns ``--repeat`` times, side
by side with their ratios (parsing against no parsing and against the floors).

Also printed: the parser alone (``parse_line``) per 1,000 lines of each kind, and the
parser on adversarial texts near each form at 8k, 16k and 32k characters (the fixed
regular expressions run on Python's ``re``, whose time the tests cannot count: it must
double, not quadruple, from one size to the next).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tidegate.db.migrate import upgrade_database
from tidegate.db.sqlite_connect import open_writer
from tidegate.ingest.decoding import body_lines
from tidegate.ingest.service import IngestParams, build_line
from tidegate.logs.exclusion import RuleSet
from tidegate.logs.intake import judge_lines
from tidegate.logs.parsing import parse_line, parse_text
from tidegate.logs.store import COLUMNS, NewLine, sqlite_write
from tidegate.logs.templates import TemplateSet
from tidegate.processing.grok import TemplatePattern

ACCOUNT = "bench-account"
LEVELS = ["info", "warn", "error", "debug"]
PATHS = ["/api/orders", "/api/users/42", "/health", "/static/app.js"]
# Five custom parsing templates of the kinds an account writes, none of which matches a
# line of the corpus; the last of MATCHING matches its plain "user N signed in" lines.
TEMPLATES = [
    r"^%{IP:client} %{WORD:method} %{URIPATH:path} %{INT:status:int}$",
    r"order=(?P<order>\d+) amount=%{NUMBER:amount:float}",
    r"^\[%{TIMESTAMP_ISO8601:time}\] %{LOGLEVEL:level} %{NOTSPACE:logger} - %{GREEDYDATA:message}$",
    r"user=%{USER:user} action=%{WORD:action}",
    r"payment %{UUID:payment_id} %{WORD:outcome}",
]
MATCHING = [*TEMPLATES[:4], r"^user %{INT:user_id:int} signed in from (?P<client>.+)$"]


def rules_with(patterns: list[str]) -> RuleSet:
    return RuleSet((), TemplateSet([TemplatePattern(pattern) for pattern in patterns]))


def json_line(rng: random.Random) -> str:
    record = {
        "ts": "2025-11-22T08:00:01.123Z",
        "level": rng.choice(LEVELS),
        "message": f"request finished in {rng.randint(1, 900)} ms",
        "status": rng.choice([200, 200, 201, 404, 500, 503]),
        "method": rng.choice(["GET", "POST"]),
        "path": rng.choice(PATHS),
        "user": {"id": rng.randint(1, 10_000), "org": "acme"},
        "trace_id": f"{rng.getrandbits(64):016x}",
    }
    text = json.dumps(record, separators=(",", ":"))
    return text if rng.random() < 0.8 else "2025-11-22T08:00:01Z handler done " + text


def other_line(rng: random.Random) -> str:
    kind = rng.randrange(6)
    if kind == 0:
        return f"2025-11-22 08:00:01,123 {rng.choice(LEVELS).upper()} [main] cache refreshed in {rng.randint(1, 99)} ms"
    if kind == 1:
        return f'time=2025-11-22T08:00:01Z level={rng.choice(LEVELS)} msg="job done" took={rng.randint(1, 99)}ms'
    if kind == 2:
        return (
            f"10.0.{rng.randint(0, 255)}.{rng.randint(0, 255)} - - [22/Nov/2025:08:00:01 +0000] "
            f'"GET {rng.choice(PATHS)} HTTP/1.1" {rng.choice([200, 404, 503])} {rng.randint(1, 9999)} '
            '"-" "Mozilla/5.0 (X11; Linux x86_64)"'
        )
    if kind == 3:
        return (
            "2025/11/22 08:00:01 [error] 12#12: *9 upstream timed out, client: 10.0.0.1, "
            'server: api, request: "GET /x HTTP/1.1"'
        )
    if kind == 4:
        return (
            f"<34>Nov 22 08:00:01 web-1 sshd[{rng.randint(1, 9999)}]: Accepted publickey for deploy"
        )
    return f"user {rng.randint(1, 9999)} signed in from the mobile app"


def corpus(count: int) -> list[str]:
    rng = random.Random(7)
    return [json_line(rng) if index % 2 == 0 else other_line(rng) for index in range(count)]


def body(texts: list[str]) -> bytes:
    return json.dumps({"lines": [{"line": text, "app": "web"} for text in texts]}).encode()


def fresh_database(workdir: Path, name: str) -> sqlite3.Connection:
    path = workdir / f"{name}.sqlite3"
    asyncio.run(upgrade_database(f"sqlite+aiosqlite:///{path}"))
    connection = open_writer(str(path), "NORMAL")
    connection.execute("PRAGMA foreign_keys=OFF")  # no accounts row: lines only
    return connection


def ingest_cpu(
    connection: sqlite3.Connection, bodies: list[bytes], *, parse: bool, rules: RuleSet
) -> tuple[float, list[Any]]:
    """CPU seconds to take every body from its bytes to committed rows; the rows."""
    params = IngestParams(hostname="web-1", mac=None, ip=None, now=None, tags=())
    rows: list[Any] = []
    started = time.process_time()
    for raw in bodies:
        lines = (
            build_line(item, params=params, default_ts=1, tags=None) for item in body_lines(raw)
        )
        judged = judge_lines(
            account_id=ACCOUNT, lines=lines, rules=rules, received_ms=1, parse=parse
        )
        assert judged.batch is not None
        connection.execute("BEGIN IMMEDIATE")
        sqlite_write(connection, [judged.batch])
        connection.execute("COMMIT")
        rows.append(judged.batch.rows)
    return time.process_time() - started, rows


def floor_cpu(connection: sqlite3.Connection, batches: list[list[tuple[Any, ...]]]) -> float:
    search = COLUMNS.index("search")
    insert_line = "INSERT INTO log_lines (id, {}) VALUES (?, {})".format(
        ", ".join(COLUMNS[:search]), ", ".join("?" * search)
    )
    next_id = 1
    started = time.process_time()
    for rows in batches:
        ids = range(next_id, next_id + len(rows))
        next_id += len(rows)
        connection.execute("BEGIN IMMEDIATE")
        connection.executemany(
            insert_line, [(line_id, *row[:search]) for line_id, row in zip(ids, rows, strict=True)]
        )
        connection.executemany(
            "INSERT INTO log_search (rowid, text) VALUES (?, ?)",
            [(line_id, row[search]) for line_id, row in zip(ids, rows, strict=True)],
        )
        connection.execute("COMMIT")
    return time.process_time() - started


def parser_only(texts: list[str], rules: RuleSet | None = None) -> float:
    lines = [NewLine(line=text, ts=1, host="h") for text in texts]
    templates = rules.templates.parse if rules is not None else None
    started = time.process_time()
    for line in lines:
        parse_line(line, templates)
    return time.process_time() - started


# Texts that come close to a form and then fail, or that a backtracking pattern would
# find hard, by length.
ADVERSARIAL: dict[str, Callable[[int], str]] = {
    "open braces": lambda n: "{" * (n - 1) + "}",
    "many { then JSON": lambda n: "x {" * (n // 3 - 4) + '{"a":1}',
    "logfmt, unterminated quote": lambda n: 'a=1 k="' + "\\x" * (n // 3),
    "logfmt pairs then junk": lambda n: "a=b " * (n // 4 - 1) + '"x',
    "access, unterminated request": lambda n: '1.2.3.4 - - [x] "' + "\\" * (n // 2 - 12),
    "syslog 5424, open SD": lambda n: "<13>1 t h a p m " + '[x a="' * (n // 6 - 3),
    "syslog 5424, SD never closed": lambda n: "<13>1 t h a p m [x" + ' a="b"' * (n // 6 - 4),
    "syslog 3164, long message": lambda n: "<13>Oct 11 22:14:15 h app[1]: " + "x " * (n // 2 - 16),
    "nginx error, many keys": lambda n: (
        "2025/11/22 08:00:01 [error] 1#2: x" + ", client: ," * (n // 11 - 4)
    ),
    "klog, caller never closed": lambda n: "E1122 08:00:01.123456 1 " + "a" * n,
    "level window, spaces": lambda n: " " * n + "ERROR",
    "postgresql, user@ never ending": lambda n: "2025-11-22 08:00:01 UTC [1] " + "@" * (n - 28),
    "ruby logger, progname never closed": lambda n: (
        "I, [2025-11-22T08:00:01 #1]  INFO -- " + "a" * (n - 38)
    ),
    "load balancer, open quote": lambda n: (
        'http 2025-11-22T08:00:01.1Z a b c 1 1 1 200 200 1 1 "' + '\\"' * (n // 2 - 28)
    ),
    "haproxy, quotes": lambda n: (
        "1.2.3.4:5 [22/Nov/2025:08:00:01.655] a b/c 1/1/1/1/1 200 1 " + '"' * (n - 60)
    ),
    "haproxy in syslog, timers never end": lambda n: (
        "<134>Nov 22 08:00:01 haproxy[1]: 1.2.3.4:5 [22/Nov/2025:08:00:01.655] a b/c "
        + "1/" * (n // 2)
    ),
    "syslog 3164, tag never closed": lambda n: "<134>Nov 22 08:00:01 " + "a" * n,
    "syslog 3164, brackets": lambda n: "Nov 22 08:00:01 " + "[" * n,
    "lambda report, many metrics": lambda n: (
        "REPORT RequestId: 8f507cfc-0a1b-4c2d-9e3f-4a5b6c7d8e9f\t" + "Duration: 1 ms\t" * (n // 15)
    ),
    "lambda report, names never end": lambda n: (
        "REPORT RequestId: 8f507cfc-0a1b-4c2d-9e3f-4a5b6c7d8e9f\t" + "a " * (n // 2)
    ),
    "lambda runtime, tabs": lambda n: (
        "2025-11-22T08:00:01.123Z\t8f507cfc-0a1b-4c2d-9e3f-4a5b6c7d8e9f\tERROR\t" + "\t" * n
    ),
    "cloudwatch export, times": lambda n: "2025-11-22T08:00:01.123Z " * (n // 25),
}


def adversarial() -> None:
    sizes = (8_000, 16_000, 32_000)
    print(
        "adversarial texts, µs per parse at "
        + ", ".join(f"{size:,}" for size in sizes)
        + " characters:"
    )
    for name, make in ADVERSARIAL.items():
        times = []
        for size in sizes:
            text = make(size)[:size]
            runs = 20
            started = time.process_time()
            for _ in range(runs):
                parse_text(text)
            times.append((time.process_time() - started) / runs * 1e6)
        shown = "  ".join(f"{value:>9.1f}" for value in times)
        print(f"  {name:<30}{shown}   x{times[-1] / max(times[0], 1e-9):.1f} for x4 the size")


def best(repeat: int, run: Callable[[int], float]) -> float:
    return min(run(attempt) for attempt in range(repeat))


def measure(args: argparse.Namespace, texts: list[str]) -> dict[str, float]:
    """CPU seconds of each cell for the whole corpus, best of ``--repeat``."""
    bodies = [body(texts[start : start + args.batch]) for start in range(0, len(texts), args.batch)]
    with tempfile.TemporaryDirectory() as workdir:
        built: dict[str, list[Any]] = {}

        def cell(parse: bool, rules: RuleSet, name: str) -> Callable[[int], float]:
            def run(attempt: int) -> float:
                connection = fresh_database(Path(workdir), f"{name}{attempt}")
                try:
                    used, rows = ingest_cpu(connection, bodies, parse=parse, rules=rules)
                finally:
                    connection.close()
                built[name] = rows
                return used

            return run

        no_rules = RuleSet(())

        def floor(attempt: int, rows: str) -> float:
            connection = fresh_database(Path(workdir), f"f{rows}{attempt}")
            try:
                return floor_cpu(connection, built[rows])
            finally:
                connection.close()

        # Alternated, so that a change in the machine's load touches every cell alike.
        runs: dict[str, Callable[[int], float]] = {
            "parsing": cell(True, no_rules, "parsed"),
            "no parsing": cell(False, no_rules, "plain"),
        }
        if args.templates:
            runs["5 templates"] = cell(True, rules_with(TEMPLATES), "t")
            runs["5 templates, 1 in 12"] = cell(True, rules_with(MATCHING), "m")
        runs["floor, parsed rows"] = lambda attempt: floor(attempt, "parsed")
        runs["floor, plain rows"] = lambda attempt: floor(attempt, "plain")
        best = dict.fromkeys(runs, float("inf"))
        for attempt in range(args.repeat):
            for name, run in runs.items():
                best[name] = min(best[name], run(attempt))
    return best


CELLS = (
    "parsing",
    "no parsing",
    "5 templates",
    "5 templates, 1 in 12",
    "floor, parsed rows",
    "floor, plain rows",
)


def compare(args: argparse.Namespace, trees: dict[str, str]) -> int:
    """Each tree's cells in a process of its own (``--json``, ``PYTHONPATH`` its
    ``src``), the trees taking turns ``--repeat`` times; best of each."""
    best: dict[str, dict[str, float]] = {tree: {} for tree in trees}
    for _attempt in range(args.repeat):
        for tree, src in trees.items():
            env = {**os.environ, "PYTHONPATH": src, "PYTHONDONTWRITEBYTECODE": "1"}
            command = [sys.executable, __file__, "--json", "--repeat", "1"]
            command += ["--lines", str(args.lines), "--batch", str(args.batch)]
            command += ["--templates", str(args.templates)]
            out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
            for name, used in json.loads(out.stdout.strip().splitlines()[-1]).items():
                best[tree][name] = min(best[tree].get(name, float("inf")), used)
    print(
        f"{args.lines:,} lines (half JSON), transactions of {args.batch:,} lines, SQLite, "
        f"best of {args.repeat}, the trees taking turns; CPU ms per 1,000 lines"
    )
    names = list(trees)
    print(f"{'cell':<34}" + "".join(f"{name:>16}" for name in names))
    for cell in CELLS:
        if cell in best[names[0]]:
            print(f"{cell:<34}" + "".join(f"{best[name][cell]:>16.2f}" for name in names))
    for label, top, bottom in (
        ("parsing / no parsing", "parsing", "no parsing"),
        ("parsing / its floor", "parsing", "floor, parsed rows"),
        ("no parsing / its floor", "no parsing", "floor, plain rows"),
        ("parsing / floor of plain rows", "parsing", "floor, plain rows"),
    ):
        print(f"{label:<34}" + "".join(f"{best[n][top] / best[n][bottom]:>16.2f}" for n in names))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lines", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--templates", type=int, default=5, choices=(0, 5))
    parser.add_argument(
        "--compare-src", type=Path, help="another checkout's src/ to measure beside this one"
    )
    parser.add_argument("--json", action="store_true", help="the cells only, as JSON")
    args = parser.parse_args()
    if args.compare_src is not None:
        here = str(Path(__file__).resolve().parent.parent / "src")
        return compare(args, {"this tree": here, str(args.compare_src): str(args.compare_src)})
    texts = corpus(args.lines)
    per_k = 1000 / len(texts)
    # As a served worker does once started (``tidegate.app.freeze_start_up_heap``): the
    # start-up objects (~140,000 here) out of the collector's reach, so that a full
    # collection, walking them, does not fall in one cell or another by chance (about
    # 6 ms per 1,000 lines in the cell it falls in).
    gc.collect()
    gc.freeze()
    cells = measure(args, texts)
    if args.json:
        print(json.dumps({name: used * per_k * 1000 for name, used in cells.items()}))
        return 0
    parsing, no_parsing = cells["parsing"], cells["no parsing"]
    floor_parsed, floor_plain = cells["floor, parsed rows"], cells["floor, plain rows"]
    print(
        f"{len(texts):,} lines (half JSON), transactions of {args.batch:,} lines, SQLite, best of {args.repeat}"
    )
    print(f"{'cell':<34}{'CPU ms / 1,000 lines':>22}{'x floor':>10}")
    rows = (
        ("parsing", parsing, floor_parsed),
        *(
            (
                ("parsing, 5 templates, none match", cells["5 templates"], floor_parsed),
                (
                    "parsing, 5 templates, 1 in 12 match",
                    cells["5 templates, 1 in 12"],
                    floor_parsed,
                ),
            )
            if args.templates
            else ()
        ),
        ("no parsing", no_parsing, floor_plain),
        ("floor: rows with parsed fields", floor_parsed, floor_parsed),
        ("floor: rows without", floor_plain, floor_plain),
    )
    for name, used, against in rows:
        print(f"{name:<34}{used * per_k * 1000:>22.2f}{used / against:>10.2f}")
    print(
        f"parsing adds {(parsing - no_parsing) * per_k * 1000:.2f} ms per 1,000 lines "
        f"({(parsing / no_parsing - 1) * 100:+.0f}% of the path without it)"
    )
    if args.templates:
        templated = cells["5 templates"]
        print(
            f"5 templates (none match) add {(templated - parsing) * per_k * 1000:.2f} ms per "
            f"1,000 lines ({(templated / parsing - 1) * 100:+.0f}% of the path with parsing)"
        )
    print("the parser alone, ms per 1,000 lines of each kind:")
    rng = random.Random(3)
    kinds = {
        "json": [json_line(rng) for _ in range(2_000)],
        "other forms": [other_line(rng) for _ in range(2_000)],
        "plain text": [f"user {index} signed in from the mobile app" for index in range(2_000)],
    }
    for name, sample in kinds.items():
        used = best(args.repeat, lambda _attempt, sample=sample: parser_only(sample))  # type: ignore[misc]
        print(f"  {name:<12}{used / len(sample) * 1e6:>10.2f}")
        if args.templates:
            used = best(
                args.repeat,
                lambda _attempt, sample=sample: parser_only(sample, rules_with(TEMPLATES)),  # type: ignore[misc]
            )
            print(
                f"  {'':<12}{used / len(sample) * 1e6:>10.2f}  after 5 templates that do not match"
            )
    adversarial()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

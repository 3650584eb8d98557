"""Micro-benchmark of compiled search queries (not a test).

Searching runs in the database, but the Python matcher still confirms every candidate
the SQL selects (and judges every line against exclusion rules and live-tail filters),
so its cost per line is part of every filtered export page; bench_search.py measures
the whole path, this the matcher alone.

Lines per second through 0, 10 and 100 compiled rules of mixed kinds, against a floor:
a plain loop doing ``term in line.lower()`` once per rule, the least any rule could cost.
Every rule is evaluated for every line (the worst case: no early exit on a match).

    .venv/bin/python bench/bench_matcher.py
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from functools import partial

from tidegate.search import LogLine, Query, compile_query

Stream = list[tuple[str, str, str, str, Mapping[str, object]]]

LINES = 20_000
REPEATS = 3
RULE_COUNTS = (0, 10, 100)

WORDS = [
    "request", "served", "timeout", "upstream", "connection", "refused", "user", "login",
    "failed", "cache", "miss", "disk", "full", "retrying", "payment", "accepted", "queue",
    "worker", "started", "stopped", "GET", "POST", "/api/v1/orders", "/health", "db",
]  # fmt: skip
APPS = ["api", "web", "worker", "healthcheck", "billing", "auth", "nginx", "cron"]
LEVELS = ["DEBUG", "INFO", "INFO", "INFO", "WARN", "ERROR"]
HOSTS = [f"web-{n:02d}.prod" for n in range(12)] + ["db-1.prod", "staging-3"]

# One template per kind of rule; {w} is a word, {n} a number, {a} an app, {l} a level.
TEMPLATES = [
    "{w}",
    '"{w} {w2}"',
    "app:{a}",
    "-app:{a} {w}",
    "host:web-{n2}",
    "level:[debug,trace]",
    "level:==error {w}",
    "status:>={n}",
    "status:(>=400 <500 -404)",
    "duration_ms:>{n}0",
    "user.id:{n}",
    "meta.region:=eu",
    "tags:*",
    "name:===Bob",
    "{w} OR {w2}",
    "({w} -{w2}) OR app:{a}",
    "app:(web OR api) level:[warn,error] -{w}",
    "status:(>100 AND <= 503) host:db",
    "{w} {w2} OR {w3}",
    'msg:"a:b"',
]


def make_stream(rng: random.Random) -> Stream:
    stream: Stream = []
    for index in range(LINES):
        text = " ".join(rng.choices(WORDS, k=rng.randint(6, 16))) + f" id={index}"
        meta: dict[str, object] = {
            "status": rng.choice([200, 200, 200, 201, 301, 404, 429, 500, 503]),
            "duration_ms": rng.randint(1, 2000),
            "user": {"id": rng.randint(1, 99_999)},
        }
        if rng.random() < 0.3:
            meta["region"] = rng.choice(["eu-west", "us-east", "EU-central"])
        if rng.random() < 0.2:
            meta["tags"] = ["a", "b"]
        stream.append((text, rng.choice(HOSTS), rng.choice(APPS), rng.choice(LEVELS), meta))
    return stream


def make_rules(rng: random.Random, count: int) -> list[Query]:
    rules = []
    for index in range(count):
        template = TEMPLATES[index % len(TEMPLATES)]
        w, w2, w3 = (word.lower() for word in rng.sample(WORDS[:20], 3))
        text = template.format(
            w=w, w2=w2, w3=w3, a=rng.choice(APPS), n=rng.randint(100, 999), n2=rng.randint(0, 11)
        )
        rules.append(compile_query(text))
    return rules


def run_compiled(stream: Stream, matchers: list[Callable[[LogLine], bool]]) -> int:
    hits = 0
    for text, host, app, level, meta in stream:
        line = LogLine(text, host=host, app=app, level=level, meta=meta)
        for matches in matchers:
            if matches(line):
                hits += 1
    return hits


def run_floor(stream: Stream, terms: list[str]) -> int:
    hits = 0
    for text, _host, _app, _level, _meta in stream:
        for term in terms:
            if term in text.lower():
                hits += 1
    return hits


def best_of(run: Callable[[], int]) -> tuple[float, int]:
    """Lines per second of the fastest of REPEATS runs, and what the run returned."""
    best, result = float("inf"), 0
    for _ in range(REPEATS):
        started = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - started)
    return LINES / best, result


def main() -> None:
    rng = random.Random(20240611)
    stream = make_stream(rng)
    print(f"{LINES} synthetic lines, best of {REPEATS}; every rule evaluated on every line")
    print(f"{'rules':>5}  {'tidegate lines/s':>16}  {'floor lines/s':>14}  {'ratio':>6}  matches")
    for count in RULE_COUNTS:
        matchers = [rule.matches for rule in make_rules(rng, count)]
        terms = [word.lower() for word in rng.choices(WORDS, k=count)]
        ours, hits = best_of(partial(run_compiled, stream, matchers))
        baseline, _ = best_of(partial(run_floor, stream, terms))
        ratio = ours / baseline
        print(f"{count:>5}  {ours:>16,.0f}  {baseline:>14,.0f}  {ratio:>6.2f}  {hits}")
    print("ratio = tidegate / floor (1.00 would be as fast as the floor); with 0 rules")
    print("the tidegate column is the cost of building one LogLine per line")


if __name__ == "__main__":
    main()

"""CPU per matched value of tenant patterns, before and after issue 7 (not a test).

    PYTHONPATH=src python bench/bench_tenant_patterns.py

Side by side in one run:

  regex_match  Python's `re` (the former engine) against RE2 (`LinearRegex`, what
               conditions use now) on ordinary patterns over access-log lines, and on
               `(a+)+$` against n `a`s followed by `!` (`re` only for small n: it doubles
               with each `a`).
  wildcards    the former exclusion-rule regex against `Wildcards` on ordinary names,
               and on `*a*a*a*a*b` against hosts of n `a`s.

Prints CPU nanoseconds per value (process time) and the ratio new/old. The numbers
come from whatever machine runs it; under load they are noisy.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable

from tidegate.logs.exclusion import Wildcards
from tidegate.processing.linear_regex import LinearRegex


def cpu_ns(test: Callable[[str], object], values: list[str], rounds: int = 3) -> float:
    start = time.process_time()
    for _ in range(rounds):
        for value in values:
            test(value)
    return (time.process_time() - start) / (rounds * len(values)) * 1e9


def old_wildcards(names: Iterable[str]) -> re.Pattern[str]:
    alternatives = (
        "(?s:" + ".*".join(re.escape(part) for part in name.split("*")) + ")" for name in names
    )
    return re.compile("|".join(alternatives), re.IGNORECASE)


def row(label: str, old: float | None, new: float) -> None:
    ratio = f"{new / old:6.2f}x" if old else "   n/a "
    before = f"{old:12.0f}" if old is not None else "   (skipped)"
    print(f"{label:52} {before} {new:10.0f} {ratio}")


def main() -> None:
    lines = [
        f"GET /api/v1/users/{i} {200 + (i % 7 == 0) * 300} {i * 7 % 1000}ms agent=curl/8.{i % 10}"
        for i in range(10_000)
    ]
    print(f"{'regex_match (ns CPU per line)':52} {'re':>12} {'RE2':>10} {'RE2/re':>7}")
    for pattern in (r"timeout|error", r"^GET /api/v\d+/users/\d+ 5\d\d", r"agent=curl/8\.[0-3]$"):
        old = re.compile(pattern, re.IGNORECASE)
        new = LinearRegex(pattern, case_sensitive=False)
        row(repr(pattern), cpu_ns(old.search, lines), cpu_ns(new.search, lines))
    evil_old = re.compile("(a+)+$")
    evil_new = LinearRegex("(a+)+$")
    for n in (16, 20, 22, 1_000, 100_000):
        subject = ["a" * n + "!"]
        old_ns = cpu_ns(evil_old.search, subject, rounds=1) if n <= 22 else None
        row(f"'(a+)+$' on {n} a's + '!'", old_ns, cpu_ns(evil_new.search, subject, rounds=1))

    hosts = [f"web-{i}.prod.eu-west-1.internal" for i in range(10_000)]
    names = ["db-*", "*.staging.*", "web-1*.prod.*"]
    print(f"\n{'wildcards (ns CPU per host)':52} {'regex':>12} {'linear':>10} {'ratio':>7}")
    row(
        repr(names),
        cpu_ns(old_wildcards(names).fullmatch, hosts),
        cpu_ns(Wildcards(names).matches, hosts),
    )
    evil = ["*a*a*a*a*b"]
    for n in (20, 40, 60, 200, 100_000):
        subject = ["a" * n]
        old_ns = cpu_ns(old_wildcards(evil).fullmatch, subject, rounds=1) if n <= 60 else None
        row(f"'*a*a*a*a*b' on {n} a's", old_ns, cpu_ns(Wildcards(evil).matches, subject, rounds=1))


if __name__ == "__main__":
    main()

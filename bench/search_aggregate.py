"""The aggregation side of ``bench_search.py``: ``GET /v1/aggregate`` (the histogram and
the top hosts, apps and levels) over the whole range of each case, timed, and checked
against the export walk of the same case, which is itself checked against the matcher.

The request asks for the defaults spelled out (``buckets=60``, ``top=10``): what a log
view asks for. An answer that is not exact (too many candidates to confirm) is checked
on the part it counted, ``counted_from`` to ``to``.
"""

from __future__ import annotations

import statistics
import time
from array import array
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

from harness import cpu_seconds

BUCKETS = 60
TOP = 10
FIELDS = ("host", "app", "level")


@dataclass
class WalkedLines:
    """What the check needs of each line an export walk returned: its time, and codes of
    its case-folded host, app and level (0: the line has none) into ``values``."""

    ts: array[int] = field(default_factory=lambda: array("q"))
    codes: array[int] = field(default_factory=lambda: array("I"))
    values: dict[str, int] = field(default_factory=dict)

    def add(self, record: dict[str, Any]) -> None:
        self.ts.append(record["_ts"])
        for name in ("_host", "_app", "level"):
            value = record.get(name)
            code = (
                0
                if value is None
                else self.values.setdefault(value.casefold(), len(self.values) + 1)
            )
            self.codes.append(code)


@dataclass
class Aggregated:
    seconds: float  # median of 3 requests
    cpu_s: float  # of the server, per request
    total: int
    exact: bool
    problems: list[str]


def measure_aggregation(
    http: httpx.Client, params: dict[str, Any], walked: WalkedLines, pid: int
) -> Aggregated | None:
    """None when the server has no aggregation endpoint."""
    params = {
        **{name: value for name, value in params.items() if name != "prefer"},
        "buckets": BUCKETS,
        "top": TOP,
    }
    times = []
    cpu = cpu_seconds(pid)
    for _ in range(3):
        started = time.perf_counter()
        response = http.get("/v1/aggregate", params=params)
        times.append(time.perf_counter() - started)
        if response.status_code == 404:
            return None
        if response.status_code != 200:
            raise RuntimeError(f"aggregate: {response.status_code} {response.text[:300]}")
    cpu_s = (cpu_seconds(pid) - cpu) / 3
    answer = orjson.loads(response.content)
    return Aggregated(
        statistics.median(times),
        cpu_s,
        answer["total"],
        answer["exact"],
        disagreements(answer, walked),
    )


def disagreements(answer: dict[str, Any], walked: WalkedLines) -> list[str]:
    """How the answer differs from counting the walked lines from ``counted_from`` on."""
    start, bucket = answer["counted_from"], answer["bucket_ms"]
    histogram: Counter[int] = Counter()
    tops: list[Counter[int]] = [Counter() for _ in FIELDS]
    codes = walked.codes
    for index, ts in enumerate(walked.ts):
        if ts < start:
            continue
        histogram[ts - ts % bucket] += 1
        for position, counter in enumerate(tops):
            code = codes[3 * index + position]
            if code:
                counter[code] += 1
    problems = []
    answered = {item["ts"]: item["count"] for item in answer["histogram"] if item["count"]}
    if answered != dict(histogram):
        differing = sum(
            1 for ts in answered.keys() | histogram.keys() if answered.get(ts) != histogram.get(ts)
        )
        problems.append(f"histogram: {differing} buckets differ from the walk's lines")
    if answer["total"] != histogram.total():
        problems.append(f"total {answer['total']}, the walk {histogram.total()} lines")
    names = {code: value for value, code in walked.values.items()}
    for name, counter in zip(FIELDS, tops, strict=True):
        wanted = sorted(
            ((names[code], count) for code, count in counter.items()),
            key=lambda item: (-item[1], item[0]),
        )[:TOP]
        given = [(item["value"], item["count"]) for item in answer["top"][name]]
        if given != wanted:
            problems.append(f"top {name}: {given[:3]}... where the walk gives {wanted[:3]}...")
    return problems

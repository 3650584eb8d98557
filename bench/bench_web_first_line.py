"""Benchmark: time to the first log line on the web app's search page, in a real browser.

    PYTHONPATH=src python bench/bench_web_first_line.py [--lines 5m] [--runs 5] [--seed 8]
                                                        [--cache-dir DIR]

The data set is bench_search's (``search_dataset.py``: ``--lines`` lines of one account
over 7 days plus 5% of other accounts'), loaded into SQLite through the store's write
path, kept in bench_search's cache directory and reused (``bench_search.py --lines 5m
--backends sqlite --keep --load-only`` makes the same load). A real ``tidegate serve``
(one worker) serves it; Debian's Chromium, driven by Playwright, is signed in through
``POST /v1/auth/session`` and opens ``/search?q=<case>&from=<first line>&to=<last line>``
(the whole 7 days) for each of bench_search's cases.

Measured per case, median of ``--runs``:

- **page to first line**: from the start of the navigation (the browser's time origin)
  to the moment the first ``[data-testid=log-line]`` element is in the page (a
  MutationObserver installed before any of the page's scripts runs). It covers the HTML,
  the scripts, the session check, the first export page (100 lines, newest first) and
  drawing it; the aggregation request runs beside it and is not waited for;
- **new query to first line**: on an open page, from pressing Enter in the search box
  to the first line of the answer;
- floor: the same first export page (``GET /v2/export``, ``size=100``, ``prefer=tail``)
  asked by a plain HTTP client: what the server alone takes, which the browser cannot
  beat.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx

from bench_search import DEFAULT_CACHE, LOAD_BATCH, load, parse_count
from harness import Server
from search_dataset import CASES, Expected, generate
from search_stores import TARGETS, Target, dataset_dir

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.web.harness import chromium

FIRST_PAGE = 100  # what the search page asks for first (static/pages/search.js)

# Installed before the page's own scripts: the time the first line appears.
WATCH_FIRST_LINE = """
(() => {
  const seen = () => document.querySelector('[data-testid=log-line]');
  const observer = new MutationObserver(() => {
    if (window.__firstLineMs === undefined && seen()) {
      window.__firstLineMs = performance.now();
      observer.disconnect();
    }
  });
  observer.observe(document, { childList: true, subtree: true });
})();
"""


async def prepare(args: argparse.Namespace, work: Path) -> tuple[Target, Expected]:
    dataset = dataset_dir(args.cache_dir, args.seed, args.lines)
    target = TARGETS["sqlite"](dataset=dataset, work=work)
    sample = next(generate(seed=args.seed, lines=args.lines, batch=LOAD_BATCH))[0]
    expected = Expected.load(dataset)
    if not await target.reuse(sample) or expected is None:
        print(f"loading {args.lines:,} lines into SQLite (kept in {dataset})", flush=True)
        expected = await load([target], seed=args.seed, lines=args.lines)
        expected.save(dataset)
    else:
        print(f"reusing the load in {dataset}", flush=True)
    return target, expected


def median_ms(samples: list[float]) -> str:
    return f"{statistics.median(samples):7.0f} ms"


def measure(args: argparse.Namespace, target: Target, expected: Expected, work: Path) -> None:
    assert target.loaded is not None
    env = {
        **os.environ,
        "TIDEGATE_DATABASE_URL": target.url,
        "TIDEGATE_DATA_DIR": str(work / "var"),
        "TIDEGATE_BOOTSTRAP": "0",
        "TIDEGATE_RATE_LIMIT_PER_MINUTE": "0",
        "TIDEGATE_SECRET_KEY": "bench",
    }
    server = Server(env, "--log-level", "warning", output=None, timeout=300)
    bounds = {"from": expected.first_ms, "to": expected.last_ms}
    headers = {
        "Authorization": f"Token {target.loaded.token}",
        "x-delegate-account-id": target.loaded.account_id,
    }
    rows = []
    try:
        with (
            chromium() as (_playwright, browser),
            httpx.Client(base_url=server.base, headers=headers, timeout=600) as http,
        ):
            context = browser.new_context(viewport={"width": 1360, "height": 820})
            context.add_init_script(WATCH_FIRST_LINE)
            signed_in = context.request.post(
                server.base + "/v1/auth/session",
                data={"key": target.loaded.token, "account_id": target.loaded.account_id},
            )
            assert signed_in.ok, signed_in.text()
            page = context.new_page()
            page.set_default_timeout(600_000)
            for case in CASES:
                query = case.query or ""
                url = f"{server.base}/search?{urlencode({'q': query, **bounds})}"
                cold: list[float] = []
                typed: list[float] = []
                floor: list[float] = []
                for _ in range(args.runs):
                    page.goto("about:blank")
                    page.goto(url)
                    page.wait_for_function("() => window.__firstLineMs !== undefined")
                    cold.append(page.evaluate("window.__firstLineMs"))
                    # The same query typed again on the open page, once its counts are in.
                    page.wait_for_load_state("networkidle")
                    with page.expect_response(lambda r: "/v1/aggregate" in r.url):
                        started = page.evaluate(
                            """() => {
                                window.__firstLineMs = undefined;
                                const list = document.querySelector('[data-testid=lines]');
                                const observer = new MutationObserver(() => {
                                    if (list.querySelector('[data-testid=log-line]')) {
                                        window.__firstLineMs = performance.now();
                                        observer.disconnect();
                                    }
                                });
                                observer.observe(list, { childList: true });
                                const input = document.querySelector('[data-testid=search-input]');
                                const t = performance.now();
                                input.form.requestSubmit();
                                return t;
                            }"""
                        )
                        page.wait_for_function("() => window.__firstLineMs !== undefined")
                        typed.append(page.evaluate("window.__firstLineMs") - started)
                    params: dict[str, Any] = {**bounds, "size": FIRST_PAGE, "prefer": "tail"}
                    if query:
                        params["query"] = query
                    began = time.perf_counter()
                    answer = http.get("/v2/export", params=params)
                    floor.append((time.perf_counter() - began) * 1000)
                    assert answer.status_code == 200, answer.text
                rows.append((case.name, cold, typed, floor))
                print(
                    f"{case.name:12} page {median_ms(cold)}  typed {median_ms(typed)}  "
                    f"export alone {median_ms(floor)}",
                    flush=True,
                )
            context.close()
    finally:
        server.stop()
    print(
        f"\n{args.lines:,} lines (seed {args.seed}), SQLite, one worker; medians of {args.runs}; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    print(
        "| query | page to first line | new query to first line | floor: first export page alone |"
    )
    print("|---|---|---|---|")
    for name, cold, typed, floor in rows:
        print(
            f"| {name} | {statistics.median(cold):,.0f} ms | {statistics.median(typed):,.0f} ms "
            f"| {statistics.median(floor):,.0f} ms |"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=parse_count, default=5_000_000, help="200k, 1m, 5m, ...")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE / "search")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-web-") as tmp:
        work = Path(tmp)
        target, expected = asyncio.run(prepare(args, work))
        measure(args, target, expected, work)


if __name__ == "__main__":
    main()

"""Benchmark: the search page's virtualised line list at depth, in a real browser.

    PYTHONPATH=src python bench/bench_web_depth.py [--lines 100000]

A real ``tidegate serve`` (SQLite) with ``--lines`` lines of one host and app (with a
little meta each), ingested through the API in batches of 5,000; Debian's Chromium,
signed in with a key, opens the search page (last 24 hours). Measured near the top and
again after scrolling back (a page of 500 lines per scroll to the end) until all the
lines are loaded:

- the page's elements and ``log-line`` rows (the DOM's size: bounded, whatever the depth);
- **click to paint**: clicking a row's summary (it expands) until two animation frames
  later (the frame with the change painted), median and max of 5;
- **a viewport's scroll**: ``scrollBy(innerHeight)`` to two frames later, median and max
  of 5 (the window moved, rows drawn and measured);
- the time to jump back to the top (the first row drawn).

Figures are in docs/web.md ("The line list at depth").
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playwright.sync_api import Page
from tests.waiting import until
from tests.web.conftest import serve_site
from tests.web.harness import chromium, now_ms, sign_in_with_key

BATCH = 5_000
LOADED = "Number(document.querySelector('[data-testid=lines]').dataset.count)"
ELEMENTS = "document.getElementsByTagName('*').length"
ROWS = "document.querySelectorAll('[data-testid=log-line]').length"
TWO_FRAMES = "await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));"
CLICK = f"""async () => {{
  const row = [...document.querySelectorAll('[data-testid=log-line]')]
    .find((el) => el.getBoundingClientRect().top >= innerHeight / 3);
  const t0 = performance.now();
  row.querySelector('.summary').click();
  {TWO_FRAMES}
  return performance.now() - t0;
}}"""
SCROLL = f"""async () => {{
  const t0 = performance.now();
  window.scrollBy(0, innerHeight);
  {TWO_FRAMES}
  return performance.now() - t0;
}}"""


def sample(page: Page, label: str) -> None:
    clicks = [page.evaluate(CLICK) for _ in range(5)]
    scrolls = [page.evaluate(SCROLL) for _ in range(5)]
    print(
        f"{label}: {page.evaluate(LOADED):,} lines loaded, {page.evaluate(ELEMENTS):,} elements,"
        f" {page.evaluate(ROWS)} rows; click to paint {statistics.median(clicks):.1f} ms"
        f" (max {max(clicks):.1f}); a viewport's scroll {statistics.median(scrolls):.1f} ms"
        f" (max {max(scrolls):.1f})",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=100_000)
    args = parser.parse_args()
    total: int = args.lines
    with (
        tempfile.TemporaryDirectory() as tmp,
        serve_site(Path(tmp), {"TIDEGATE_RATE_LIMIT_PER_MINUTE": "0"}) as site,
    ):
        account = site.account()
        now = now_ms()
        started = time.perf_counter()
        for start in range(0, total, BATCH):
            account.ingest(
                [
                    {
                        "line": f"deep line {i} GET /api/orders/{i} 200",
                        "app": "api",
                        "timestamp": now - i * 10,
                        "meta": {"order": {"id": i}},
                    }
                    for i in range(start, min(total, start + BATCH))
                ]
            )
        print(f"ingested {total:,} lines in {time.perf_counter() - started:.1f} s", flush=True)
        with chromium() as (_playwright, browser):
            page = browser.new_page(viewport={"width": 1280, "height": 860})
            sign_in_with_key(page, site.base_url, account.service_key)
            page.locator("[data-testid=log-line]").first.wait_for()
            sample(page, "top")
            started = time.perf_counter()
            while (loaded := page.evaluate(LOADED)) < total:
                until(
                    lambda loaded=loaded: (
                        page.evaluate(
                            f"(window.scrollTo(0, document.documentElement.scrollHeight),"
                            f" {LOADED} > {loaded})"
                        )
                        or None
                    ),
                    timeout=120,
                    what=f"more than {loaded} lines loaded",
                )
            print(f"scrolled back through {total:,} lines in {time.perf_counter() - started:.1f} s")
            page.evaluate("window.scrollBy(0, -2000)")
            sample(page, "deep")
            started = time.perf_counter()
            page.evaluate("window.scrollTo(0, 0)")
            page.locator("[data-testid=log-line] .text", has_text="deep line 0").first.wait_for()
            print(f"back to the top: {1000 * (time.perf_counter() - started):.0f} ms")


if __name__ == "__main__":
    main()

"""Benchmark: time to the first log line on the web app's search page, in a real browser.

    PYTHONPATH=src python bench/bench_web_first_line.py [--lines 5m] [--backends sqlite,postgres]
        [--runs 5] [--seed 8] [--cache-dir DIR] [--peer-src DIR]

The data set is bench_search's (``search_dataset.py``: ``--lines`` lines of one account
over 7 days plus 5% of other accounts'), loaded into each backend through the store's
write path, kept in bench_search's cache directory and reused (``bench_search.py --lines
5m --backends sqlite,postgres --keep --load-only`` makes the same loads; run loads under
``nice -n 19``). For each backend a real ``tidegate serve`` (one worker) serves it;
Debian's Chromium, driven by Playwright, is signed in through ``POST /v1/auth/session``
and opens ``/search?q=<case>&from=<first line>&to=<last line>`` (the whole 7 days) for
each of bench_search's cases.

Measured per case, median of ``--runs``:

- **page to first line**: from the start of the navigation (the browser's time origin)
  to the moment the first ``[data-testid=log-line]`` element is in the page (a
  MutationObserver installed before any of the page's scripts runs). It covers the HTML,
  the scripts (in the browser's cache: a page opened before), the session check, the
  first export page (100 lines, newest first) and drawing it; the aggregation runs after
  and is not waited for;
- **first visit**: the same in a browser that has never opened the app (a new context:
  nothing cached, every module fetched);
- **new query to first line**: on an open page, from pressing Enter in the search box
  to the first line of the answer;
- **floor**: the same first export page (``GET /v2/export``, ``size=100``,
  ``prefer=tail``) asked by a plain HTTP client: what the server alone takes, which the
  browser cannot beat; each page's time is printed as a ratio to it (the issue's goal:
  at most 2x);
- server CPU per page load (the lines, then the histogram and facets the page asks
  after them), from /proc;
- where the time went, for the page and for the first visit: when the HTML had come,
  the last script had come, the session check was answered, the first export page was
  asked and answered (Resource Timing), and the first line;
- the warm-up (no query, before anything else was asked of the server) printed apart:
  a just-started server's first page and first visit.

``--peer-src DIR``: a second server runs the code of another tree (``DIR/src``, e.g.
``git archive main src | tar -x -C DIR``) over the same database, and its page is
measured in the same runs, interleaved with this tree's: before and after a change, on
the same machine at the same moment.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
from playwright.sync_api import Browser, BrowserContext, Page

from bench_search import DEFAULT_CACHE, LOAD_BATCH, load, parse_count
from harness import Server, cpu_seconds
from search_dataset import CASES, Expected, generate
from search_stores import TARGETS, Target, dataset_dir

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.web.harness import chromium

FIRST_PAGE = 100  # what the search page asks for first (static/search_start.js)

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

# On an open page: the same query submitted again, to its first line.
TYPED_AGAIN = """() => {
    window.__firstLineMs = undefined;
    const list = document.querySelector('[data-testid=lines]');
    const observer = new MutationObserver(() => {
        if (list.querySelector('[data-testid=log-line]')) {
            window.__firstLineMs = performance.now();
            observer.disconnect();
        }
    });
    observer.observe(list, { childList: true, subtree: true }); // rows are in an inner box
    const input = document.querySelector('[data-testid=search-input]');
    const t = performance.now();
    input.form.requestSubmit();
    return t;
}"""


# After the first line: when the HTML had come, the last script had come (from the
# browser's cache, or on a first visit from the server), the session check was
# answered, the first export page was asked and answered (ms since the navigation's
# start).
PHASES = """() => {
    const nav = performance.getEntriesByType('navigation')[0];
    const resources = performance.getEntriesByType('resource');
    const found = (path) => resources.find((entry) => new URL(entry.name).pathname === path);
    const scripts = resources.filter((entry) => new URL(entry.name).pathname.endsWith('.js'));
    const session = found('/v1/auth/session');
    const exported = found('/v2/export');
    return [nav.responseEnd, Math.max(-1, ...scripts.map((entry) => entry.responseEnd)),
            session ? session.responseEnd : -1,
            exported ? exported.startTime : -1, exported ? exported.responseEnd : -1];
}"""
PHASE_NAMES = ("HTML", "scripts in", "session check answered", "export asked", "export answered")


async def prepare(args: argparse.Namespace, work: Path) -> tuple[list[Target], Expected]:
    """Each backend's load: reused from the cache, or made (all missing ones in one pass)."""
    dataset = dataset_dir(args.cache_dir, args.seed, args.lines)
    targets = [TARGETS[name](dataset=dataset, work=work) for name in args.backends]
    sample = next(generate(seed=args.seed, lines=args.lines, batch=LOAD_BATCH))[0]
    expected = Expected.load(dataset)
    to_load = [target for target in targets if not await target.reuse(sample)]
    if to_load or expected is None:
        names = ", ".join(target.backend for target in to_load) or "none (expectations only)"
        print(f"loading {args.lines:,} lines into {names} (kept in {dataset})", flush=True)
        expected = await load(to_load, seed=args.seed, lines=args.lines)
        expected.save(dataset)
    else:
        print(f"reusing the loads in {dataset}", flush=True)
    return targets, expected


@dataclass
class Samples:
    """One server's times for one case, in ms."""

    page: list[float] = field(default_factory=list)
    first_visit: list[float] = field(default_factory=list)
    typed: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)  # server CPU per page load
    phases: list[list[float]] = field(default_factory=list)  # PHASES, of each page
    first_phases: list[list[float]] = field(default_factory=list)  # of each first visit


@dataclass
class Row:
    case: str
    floor: list[float]
    ours: Samples
    peer: Samples | None


@dataclass
class Measured:
    """One server's rows, and its first page and first visit when it had just started
    (the warm-up: no query; before it nothing had been asked of the server)."""

    rows: list[Row]
    fresh: dict[str, Samples]


@dataclass
class Site:
    """A server and a browser context signed in to it (its cache kept between pages)."""

    name: str
    server: Server
    context: BrowserContext
    page: Page


def median(samples: list[float]) -> float:
    return statistics.median(samples)


def signed_in(browser: Browser, base: str, target: Target) -> BrowserContext:
    assert target.loaded is not None
    context = browser.new_context(viewport={"width": 1360, "height": 820})
    context.add_init_script(WATCH_FIRST_LINE)
    answer = context.request.post(
        base + "/v1/auth/session",
        data={"key": target.loaded.token, "account_id": target.loaded.account_id},
    )
    assert answer.ok, answer.text()
    return context


def open_page(page: Page, url: str) -> float:
    page.goto(url)
    page.wait_for_function("() => window.__firstLineMs !== undefined")
    return float(page.evaluate("window.__firstLineMs"))


def measure_once(site: Site, browser: Browser, target: Target, path: str, into: Samples) -> None:
    """A page opened (modules cached), a first visit, and the query typed again."""
    page = site.page
    page.goto("about:blank")
    cpu = cpu_seconds(site.server.pid)
    into.page.append(open_page(page, site.server.base + path))
    into.phases.append(page.evaluate(PHASES))
    page.wait_for_load_state("networkidle")  # the histogram and facets too
    into.cpu.append((cpu_seconds(site.server.pid) - cpu) * 1000)
    with page.expect_response(lambda r: "/v1/aggregate" in r.url):
        started = page.evaluate(TYPED_AGAIN)
        page.wait_for_function("() => window.__firstLineMs !== undefined")
        into.typed.append(page.evaluate("window.__firstLineMs") - started)
    fresh = signed_in(browser, site.server.base, target)
    try:
        first = fresh.new_page()
        first.set_default_timeout(600_000)
        into.first_visit.append(open_page(first, site.server.base + path))
        into.first_phases.append(first.evaluate(PHASES))
        first.wait_for_load_state("networkidle")
    finally:
        fresh.close()


def start_server(target: Target, work: Path, name: str, src: Path | None) -> Server:
    env = {
        **os.environ,
        "TIDEGATE_DATABASE_URL": target.url,
        "TIDEGATE_DATA_DIR": str(work / f"var-{name}"),
        "TIDEGATE_BOOTSTRAP": "0",
        "TIDEGATE_RATE_LIMIT_PER_MINUTE": "0",
        "TIDEGATE_SECRET_KEY": "bench",
    }
    if src is not None:
        env["PYTHONPATH"] = f"{src}{os.pathsep}{env.get('PYTHONPATH', '')}"
    return Server(env, "--log-level", "warning", output=None, timeout=300)


def measure(args: argparse.Namespace, target: Target, expected: Expected, work: Path) -> Measured:
    assert target.loaded is not None
    bounds = {"from": expected.first_ms, "to": expected.last_ms}
    headers = {
        "Authorization": f"Token {target.loaded.token}",
        "x-delegate-account-id": target.loaded.account_id,
    }
    servers = [("ours", start_server(target, work, "ours", None))]
    if args.peer_src is not None:
        servers.append(("peer", start_server(target, work, "peer", args.peer_src / "src")))
    rows = []
    try:
        with (
            chromium() as (_playwright, browser),
            httpx.Client(base_url=servers[0][1].base, headers=headers, timeout=600) as http,
        ):
            sites = []
            for name, server in servers:
                context = signed_in(browser, server.base, target)
                page = context.new_page()
                page.set_default_timeout(600_000)
                sites.append(Site(name, server, context, page))
            # Warmed up first: a fresh server's first pages are slower than any after
            # (shown apart: "just started").
            warm = f"/search?{urlencode(bounds)}"
            fresh = {site.name: Samples() for site in sites}
            for site in sites:
                measure_once(site, browser, target, warm, fresh[site.name])
            for case in CASES:
                query = case.query or ""
                path = f"/search?{urlencode({'q': query, **bounds})}"
                samples = {site.name: Samples() for site in sites}
                floor: list[float] = []
                for _ in range(args.runs):
                    for site in sites:
                        measure_once(site, browser, target, path, samples[site.name])
                    params: dict[str, Any] = {**bounds, "size": FIRST_PAGE, "prefer": "tail"}
                    if query:
                        params["query"] = query
                    began = time.perf_counter()
                    answer = http.get("/v2/export", params=params)
                    floor.append((time.perf_counter() - began) * 1000)
                    assert answer.status_code == 200, answer.text
                row = Row(case.name, floor, samples["ours"], samples.get("peer"))
                rows.append(row)
                print(target.backend, table([row], len(sites) > 1)[-1], flush=True)
            for site in sites:
                site.context.close()
    finally:
        for _name, server in servers:
            server.stop()
    return Measured(rows, fresh)


def fresh_lines(fresh: dict[str, Samples]) -> list[str]:
    """The warm-up's page and first visit (no query), on a server that had just started."""
    lines = []
    for name, samples in fresh.items():
        phases = [*samples.phases[0], samples.page[0]]
        first = [*samples.first_phases[0], samples.first_visit[0]]
        names = (*PHASE_NAMES, "first line")
        lines.append(
            f"- {name}, just started (no query): page "
            + ", ".join(f"{n} {v:,.0f}" for n, v in zip(names, phases, strict=True))
            + "; then a first visit "
            + ", ".join(f"{n} {v:,.0f}" for n, v in zip(names, first, strict=True))
            + " (ms)"
        )
    return lines


def table(rows: list[Row], peer: bool) -> list[str]:
    def cell(samples: list[float], floor: float) -> str:
        value = median(samples)
        return f"{value:,.0f} ms ({value / floor:.1f}x)"

    head = (
        "| query | floor: first export page alone | page to first line | first visit "
        "| new query to first line | server CPU per page load |"
    )
    rule = "|---|---|---|---|---|---|"
    if peer:
        head += " peer: page to first line | peer: first visit |"
        rule += "---|---|"
    lines = [head, rule]
    for row in rows:
        floor = median(row.floor)
        line = (
            f"| {row.case} | {floor:,.0f} ms | {cell(row.ours.page, floor)} "
            f"| {cell(row.ours.first_visit, floor)} | {cell(row.ours.typed, floor)} "
            f"| {median(row.ours.cpu):,.0f} ms |"
        )
        if row.peer is not None:
            line += f" {cell(row.peer.page, floor)} | {cell(row.peer.first_visit, floor)} |"
        lines.append(line)
    return lines


def phases_table(rows: list[Row], peer: bool, *, first_visit: bool = False) -> list[str]:
    """Where a page's (or a first visit's) time went (medians, ms since the navigation's
    start)."""
    names = (*PHASE_NAMES, "first line")
    lines = [
        "| query | " + " | ".join(names) + " |" + (" (this tree / peer)" if peer else ""),
        "|---|" + "---|" * len(names),
    ]
    for row in rows:
        cells = []
        for index in range(len(names)):
            shown = []
            for samples in (row.ours, row.peer) if row.peer is not None else (row.ours,):
                values = (
                    [*zip(*samples.first_phases, strict=True), samples.first_visit]
                    if first_visit
                    else [*zip(*samples.phases, strict=True), samples.page]
                )[index]
                shown.append(f"{median(values):,.0f}")
            cells.append(" / ".join(shown))
        lines.append(f"| {row.case} | " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lines", type=parse_count, default=5_000_000, help="200k, 1m, 5m, ...")
    parser.add_argument("--backends", default="sqlite,postgres", type=lambda text: text.split(","))
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE / "search")
    parser.add_argument("--peer-src", type=Path, help="another tree, measured beside this one")
    args = parser.parse_args()
    unknown = set(args.backends) - set(TARGETS)
    if unknown:
        parser.error(f"unknown backends: {', '.join(sorted(unknown))}")
    report: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-web-") as tmp:
        work = Path(tmp)
        targets, expected = asyncio.run(prepare(args, work))
        for target in targets:
            before = os.getloadavg()[0]
            measured = measure(args, target, expected, work)
            rows = measured.rows
            report += [
                "",
                f"{args.lines:,} lines (seed {args.seed}), {target.backend}, one worker; "
                f"medians of {args.runs}; load average {before:.1f} before, "
                f"{os.getloadavg()[0]:.1f} after",
                *table(rows, args.peer_src is not None),
                "",
                "Where the page's time went (ms from the navigation's start, medians):",
                *phases_table(rows, args.peer_src is not None),
                "",
                "Where a first visit's time went (ms from the navigation's start, medians):",
                *phases_table(rows, args.peer_src is not None, first_visit=True),
                "",
                *fresh_lines(measured.fresh),
            ]
    print("\n".join(report))


if __name__ == "__main__":
    main()

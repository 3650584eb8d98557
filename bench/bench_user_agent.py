"""Benchmark: the ``parse`` processor's ``user_agent`` parser (VRL's ``parse_user_agent``)
per event, in each mode, beside floors measured in the same run.

    python bench/bench_user_agent.py [--events 20000] [--rounds 5]

Each cell is the ``parse`` processor built through the registry (as the data plane
builds it) run over the same events in batches of 500; printed: CPU (``process_time``)
per 1,000 events, best of ``--rounds``, and its ratio to the floor:

- **floor**: ``parse`` with a cheap parser, ``parse_int`` on a short field and
  ``parse_query_string`` on a short query of the same events;
- **fast**, **reliable**, **enriched**: ``parse_user_agent`` in that mode on a corpus
  of real user agents (browsers on each platform, phones, bots, HTTP libraries; seven
  of the 15 lack a browser or OS family for woothee, so ``reliable`` also runs uap-core
  on those).

Then the crafted texts, CPU per parse of the parser alone at 512, 1,024 and
``MAX_USER_AGENT`` characters (``Windows `` repeated, the worst found for woothee's
quadratic search; ``BB10`` and ``iPhone; `` repeated), and uap-core's one-time compile.
No timing here is a pass/fail test.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from tidegate.components.base import BuildContext, NodeRef, RunContext
from tidegate.components.catalogue import REGISTRY
from tidegate.components.validation import validate_user_config
from tidegate.processing import user_agent
from tidegate.processing.user_agent import MAX_USER_AGENT, parse_user_agent

AGENTS = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Safari/605.1.15",
    "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.6099.43 Mobile Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 Edg/120.0.2210.61",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "Mozilla/5.0 (iPad; CPU OS 16_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/119.0.6045.169 Mobile/15E148 Safari/604.1",
    "Mozilla/4.0 (compatible; MSIE 7.66; Windows NT 5.1; SV1; .NET CLR 1.1.4322)",
    "Dalvik/2.1.0 (Linux; U; Android 11; SM-G991B Build/RP1A.200720.012)",
    "python-requests/2.31.0",
    "okhttp/4.9.0",
    "curl/8.5.0",
    "Go-http-client/1.1",
    "Mozilla/5.0 (PlayStation; PlayStation 5/2.26) AppleWebKit/605.1.15 (KHTML, like Gecko)",
]  # fmt: skip
FLOORS = {
    "floor: parse_int": {"parser": "parse_int", "field": ".n", "target_field": ".parsed"},
    "floor: parse_query_string": {"parser": "parse_query_string", "field": ".query", "target_field": ".parsed"},
}  # fmt: skip
MODES = ("fast", "reliable", "enriched")


def events(count: int) -> list[dict[str, Any]]:
    return [
        {
            "agent": AGENTS[n % len(AGENTS)],
            "n": str(n),
            "query": f"page={n % 9}&sort=asc",
            "app": f"web-{n % 10}",
        }
        for n in range(count)
    ]


def build(user_config: dict[str, Any]) -> Any:
    config = validate_user_config(kind="processor", type_="parse", user_config=user_config)
    return REGISTRY.get("processor", "parse").build(
        config, BuildContext(), NodeRef("bench", "bench", "parse", "")
    )


async def cpu_per_thousand(runtime: Any, batch: list[dict[str, Any]], rounds: int) -> float:
    """CPU milliseconds per 1,000 events, best of ``rounds``."""
    best = float("inf")
    context = RunContext()
    for _ in range(rounds):
        start = time.process_time()
        for index in range(0, len(batch), 500):
            await runtime.run(batch[index : index + 500], context=context)
        best = min(best, (time.process_time() - start) / len(batch) * 1e6)
    return best


def crafted_cost(text: str, mode: Any, repeat: int = 20) -> float:
    """CPU milliseconds per parse, best of ``repeat``."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        parse_user_agent(text, mode=mode)
        best = min(best, time.process_time() - start)
    return best * 1000


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    start = time.process_time()
    user_agent.prepare("enriched")
    print(f"uap-core rules compiled (once per process): {time.process_time() - start:.2f} s CPU")
    batch = events(args.events)
    floors = {}
    for name, config in FLOORS.items():
        floors[name] = await cpu_per_thousand(build(config), batch, args.rounds)
        print(f"{name:28} {floors[name]:9.2f} ms CPU / 1,000 events")
    floor = min(floors.values())
    for mode in MODES:
        config = {
            "parser": "parse_user_agent",
            "field": ".agent",
            "target_field": ".ua",
            "options": {"mode": mode},
        }
        cost = await cpu_per_thousand(build(config), batch, args.rounds)
        print(
            f"{'user_agent ' + mode:28} {cost:9.2f} ms CPU / 1,000 events  {cost / floor:5.1f}x the floor"
        )
    print(f"crafted texts, CPU per parse (MAX_USER_AGENT = {MAX_USER_AGENT}; longer: not parsed)")
    for name, unit in (
        ("Windows ", "Windows "),
        ("BB10", "BlackBerry BB10"),
        ("iPhone; ", "iPhone; "),
    ):
        for size in (512, 1024, MAX_USER_AGENT):
            text = ("Mozilla/5.0 (" + unit * size)[:size]
            costs = "  ".join(f"{mode} {crafted_cost(text, mode):6.2f} ms" for mode in MODES)
            print(f"  {name!r:12} {size:5}  {costs}")
    over = "Mozilla/5.0 (" + "Windows " * MAX_USER_AGENT
    print(
        f"  over the bound ({len(over)} chars): {crafted_cost(over, 'enriched'):.4f} ms (not parsed)"
    )


if __name__ == "__main__":
    asyncio.run(main())

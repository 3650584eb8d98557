"""Benchmark: events per second through each processor type's runtime, in process,
beside the floor (a pass-through: the same runner with a function that returns the
event) measured in the same run.

    python bench/bench_processors.py [--events 20000] [--rounds 5] [--only parse]

Each processor is built from an example configuration through the registry (as the
data plane builds it) and run over batches of realistic events (an access-log line, a
key=value message, nested meta); the best of ``--rounds`` is printed. No timing here
is a pass/fail test; the floor shows what the runner itself costs.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from tidegate.components.base import BuildContext, NodeRef, RunContext
from tidegate.components.catalogue import REGISTRY
from tidegate.components.processors.kit import PerEventProcessor
from tidegate.components.validation import validate_user_config

APACHE = (
    '127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326 '
    '"http://www.example.com/start.html" "Mozilla/4.08 [en] (Win98; I ;Nav)"'
)
CEF = (
    "<134>Nov 22 08:00:02 fw1 CEF:0|Palo Alto|PAN-OS|10.1|url|Blocked URL|7|rt=Nov 22 2025 "
    "08:00:01 src=10.0.0.5 dst=93.184.216.34 request=https://example.com/a?b=c cs1=corp "
    "cs1Label=Rule msg=policy match"
)
METRIC_V2 = {
    "window": {"type": "sliding", "interval": 60, "window_min": 10},
    "evaluate": {"operation": "SUM"},
}
CONFIGS: dict[str, dict[str, Any]] = {
    "filter": {"action": "allow", "conditional": {"field": ".level", "str_operator": "equal", "value": "error"}},
    "route": {"conditionals": [{"output_name": "err", "expressions": [{"field": ".level", "str_operator": "equal", "value": "error"}]}, {"output_name": "web", "expressions": [{"field": ".app", "str_operator": "starts_with", "value": "web"}]}]},
    "sample": {"rate": 10},
    "dedupe": {"fields": [".n"], "number_of_events": 5000},
    "drop-fields": {"fields": [".meta.secret", ".kv"]},
    "map-fields": {"mappings": [{"source_field": ".app", "target_field": ".service"}]},
    "flatten-fields": {"fields": [".meta"]},
    "compact-fields": {},
    "stringify": {},
    "set-timestamp": {"parsers": [{"field": ".time"}]},
    "set-timestamp (custom format)": {"parsers": [{"field": ".stamp", "format": "%a %d %b %H:%M:%S %Y"}]},
    "parse json": {"parser": "json", "field": ".json", "target_field": ".parsed"},
    "parse key_value": {"parser": "key_value", "field": ".kv", "target_field": ".parsed"},
    "parse regex": {"parser": "regex", "field": ".kv", "target_field": ".parsed", "options": {"pattern": r"user=(?P<user>\w+)"}},
    "parse apache": {"parser": "apache", "field": ".message", "target_field": ".parsed"},
    "parse grok (COMBINEDAPACHELOG)": {"parser": "grok", "field": ".message", "target_field": ".parsed", "options": {"pattern": "%{COMBINEDAPACHELOG}"}},
    "parse grok (3 tokens)": {"parser": "grok", "field": ".kv", "target_field": ".parsed", "options": {"pattern": "user=%{WORD:user} took=%{INT:took:int}ms status=%{NUMBER:status}"}},
    "parse cef": {"parser": "cef", "field": ".cef", "target_field": ".parsed"},
    "parse cef (translated)": {"parser": "cef", "field": ".cef", "target_field": ".parsed", "options": {"translate_custom_fields": True}},
    "parse timestamp": {"parser": "timestamp", "field": ".stamp", "target_field": ".parsed", "options": {"format": "%a %d %b %T %Y"}},
    "event-to-metric": {"metric_name": "hits", "tags": [{"name": "app", "value": ".app"}]},
    "encrypt-fields": {"field": ".meta.secret", "key": "k" * 32, "iv_field": ".iv"},
    "encrypt-fields cbc": {"field": ".meta.secret", "key": "k" * 32, "iv_field": ".iv", "algorithm": "AES-256-CBC-PKCS7"},
    "encrypt-fields cfb": {"field": ".meta.secret", "key": "k" * 32, "iv_field": ".iv", "algorithm": "AES-256-CFB"},
    "parse nginx (platform)": {"parser": "parse_nginx_log", "field": ".message", "target_field": ".parsed", "options": {"format": "combined"}},
    "parse-sequentially": {"field": ".kv", "target_field": ".parsed", "parsers": [{"parser": "parse_json", "label": "j"}, {"parser": "parse_key_value", "label": "kv"}]},
    "reduce": {"group_by": [".app"], "max_events": 10},
    "aggregate": {"group_by": [".app"]},
    "aggregate sliding (metrics)": METRIC_V2,
    "aggregate tumbling (metrics)": {**METRIC_V2, "window": {"type": "tumbling", "interval": 60}, "group_by": [".tags.app"]},
    "js-script": {"script": "function processEvent(e) { e.service = e.app; if (e.level === 'debug') return null; return e }"},
}  # fmt: skip


def events(count: int) -> list[dict[str, Any]]:
    return [
        {
            "app": f"web-{n % 10}",
            "level": "error" if n % 7 == 0 else "info",
            "message": APACHE,
            "kv": f"user=bob{n % 50} took={n % 300}ms status=200",
            "json": '{"a": 1, "b": [1, 2, 3], "c": {"d": "e"}}',
            "time": "2024-01-01T00:00:00Z",
            "cef": CEF,
            "stamp": "Sat 22 Nov 08:00:01 2025",
            "n": n,
            "meta": {"secret": "s3cret", "k": {"v": n, "w": None}},
        }
        for n in range(count)
    ]


def metrics(count: int) -> list[dict[str, Any]]:
    """Metric events for the platform's aggregate: ten apps on three hosts."""
    return [
        {
            "name": "requests",
            "kind": "incremental",
            "value": {"type": "counter", "value": n % 5},
            "tags": {"app": f"web-{n % 10}", "host": f"h{n % 3}"},
        }
        for n in range(count)
    ]


async def rate(runtime: Any, batch: list[dict[str, Any]], rounds: int) -> tuple[float, float]:
    """The best of ``rounds``: events per second (wall) and CPU microseconds per event."""
    best = 0.0
    cpu = float("inf")
    context = RunContext()
    for _ in range(rounds):
        start, start_cpu = time.perf_counter(), time.process_time()
        for index in range(0, len(batch), 500):  # gateway-sized batches
            await runtime.run(batch[index : index + 500], context=context)
        best = max(best, len(batch) / (time.perf_counter() - start))
        cpu = min(cpu, (time.process_time() - start_cpu) / len(batch) * 1e6)
    return best, cpu


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", default="", help="run the processors whose name holds this")
    args = parser.parse_args()
    batch = events(args.events)
    metric_batch = metrics(args.events)
    floor, floor_cpu = await rate(PerEventProcessor(lambda event: event), batch, args.rounds)
    print(f"{'floor (pass-through)':32} {floor:12,.0f} events/s {floor_cpu:8.2f} µs CPU/event")
    for name, user_config in CONFIGS.items():
        if args.only not in name:
            continue
        type_ = name.split(" ")[0]
        config = validate_user_config(kind="processor", type_=type_, user_config=user_config)
        runtime = REGISTRY.get("processor", type_).build(
            config, BuildContext(), NodeRef("bench", "bench", name, "")
        )
        value, cpu = await rate(
            runtime, metric_batch if "(metrics)" in name else batch, args.rounds
        )
        print(
            f"{name:32} {value:12,.0f} events/s {cpu:8.2f} µs CPU/event"
            f"  (1/{floor / value:,.0f} of the floor)"
        )


if __name__ == "__main__":
    asyncio.run(main())

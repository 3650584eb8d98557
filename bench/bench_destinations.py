"""Benchmark: events per second through each outbound destination's encoder (the CPU a
destination spends per event before the network), beside the floor: ``orjson.dumps`` of
each event, measured in the same run; and the source decoders beside parsing the same
body as plain JSON.

    python bench/bench_destinations.py [--events 20000] [--rounds 5]

Encoders and decoders are pure functions (no network); the best of ``--rounds`` is
printed. No timing here is a pass/fail test.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import cramjam
import orjson
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs

from tidegate.components.destinations.azure_blob_storage import (
    AzureBlobStorageConfig,
    azure_blob_requests,
)
from tidegate.components.destinations.datadog_logs import DatadogLogsConfig, datadog_requests
from tidegate.components.destinations.elasticsearch import (
    ElasticsearchConfig,
    elasticsearch_requests,
)
from tidegate.components.destinations.honeycomb_logs import (
    HoneycombLogsConfig,
    honeycomb_requests,
)
from tidegate.components.destinations.http import HttpDestinationConfig, http_requests
from tidegate.components.destinations.loki import LokiConfig, loki_requests
from tidegate.components.destinations.new_relic import NewRelicConfig, new_relic_requests
from tidegate.components.destinations.prometheus_remote_write import (
    PrometheusRemoteWriteConfig,
    RunningTotals,
    remote_write_requests,
)
from tidegate.components.destinations.s3 import S3DestinationConfig, s3_requests
from tidegate.components.destinations.splunk_hec_logs import (
    SplunkHecLogsConfig,
    splunk_hec_requests,
)
from tidegate.components.prometheus_wire import series_events
from tidegate.components.sources.open_telemetry_logs import otlp_log_events
from tidegate.components.sources.splunk_hec import hec_events

NOW = 1_735_787_045_678


def _events(count: int) -> list[dict[str, Any]]:
    return [
        {
            "message": f"GET /api/v1/orders/{n} 200 {n % 900} ms",
            "host": f"web-{n % 8}",
            "app": ("checkout", "search", "auth")[n % 3],
            "level": ("info", "warn", "error")[n % 3],
            "timestamp": NOW + n,
            "meta": {"user": {"id": n, "plan": "pro"}, "region": "eu-west-1"},
        }
        for n in range(count)
    ]


def _metrics(count: int) -> list[dict[str, Any]]:
    """Metric events of 200 series (a counter per route and host)."""
    return [
        {
            "name": "http_requests_total",
            "kind": "absolute",
            "value": {"type": "counter", "value": float(n)},
            "tags": {"route": f"/api/{n % 25}", "host": f"web-{n % 8}"},
            "timestamp": NOW + n,
        }
        for n in range(count)
    ]


def _best(function: Callable[[], object], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - started)
    return best


def _otlp_body(events: list[dict[str, Any]]) -> bytes:
    records = [
        LogRecord(
            time_unix_nano=event["timestamp"] * 1_000_000,
            severity_text=event["level"].upper(),
            body=AnyValue(string_value=event["message"]),
            attributes=[KeyValue(key="app", value=AnyValue(string_value=event["app"]))],
        )
        for event in events
    ]
    request = ExportLogsServiceRequest(
        resource_logs=[ResourceLogs(scope_logs=[ScopeLogs(log_records=records)])]
    )
    return request.SerializeToString()


def _remote_write_body(metrics: list[dict[str, Any]]) -> bytes:
    [request] = remote_write_requests(
        metrics,
        PrometheusRemoteWriteConfig.model_validate({"endpoint": "http://x.test/"}),
        received_ms=NOW,
    )
    return bytes(cramjam.snappy.decompress_raw(request.body))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    events = _events(args.events)
    metrics = _metrics(args.events)
    n = len(events)

    encoders: dict[str, Callable[[], object]] = {
        "floor: orjson.dumps per event": lambda: [orjson.dumps(event) for event in events],
        "http json": lambda: http_requests(
            events, HttpDestinationConfig.model_validate({"uri": "http://x.test/"})
        ),
        "http ndjson gzip": lambda: http_requests(
            events,
            HttpDestinationConfig.model_validate(
                {"uri": "http://x.test/", "encoding": "ndjson", "compression": "gzip"}
            ),
        ),
        "loki (labels app, level)": lambda: loki_requests(
            events,
            LokiConfig.model_validate(
                {
                    "endpoint": "http://x.test",
                    "labels": {"app": "{{ .app }}", "level": "{{ .level }}"},
                }
            ),
            received_ms=NOW,
        ),
        "elasticsearch (index per app and day)": lambda: elasticsearch_requests(
            events,
            ElasticsearchConfig.model_validate(
                {"endpoints": ["http://x.test"], "index": "logs-{{ .app }}-%Y.%m.%d"}
            ),
            received_ms=NOW,
        ),
        "s3 ndjson gzip (signed PUT)": lambda: s3_requests(
            events,
            S3DestinationConfig.model_validate(
                {
                    "auth": {"access_key_id": "k", "secret_access_key": "s"},
                    "region": "us-east-1",
                    "bucket": "b",
                    "encoding": "ndjson",
                    "compression": "gzip",
                }
            ),
            received_ms=NOW,
            endpoint="",
        ),
        "splunk-hec-logs": lambda: splunk_hec_requests(
            events, SplunkHecLogsConfig.model_validate({"endpoint": "http://x.test", "token": "t"})
        ),
        "azure-blob-storage ndjson gzip (Shared Key)": lambda: azure_blob_requests(
            events,
            AzureBlobStorageConfig.model_validate(
                {
                    "connection_string": "UseDevelopmentStorage=true",
                    "container_name": "logs",
                    "encoding": "ndjson",
                    "compression": "gzip",
                }
            ),
            received_ms=NOW,
        ),
        "datadog-logs gzip": lambda: datadog_requests(
            events,
            DatadogLogsConfig.model_validate(
                {"api_key": "k", "site": "us1", "compression": "gzip"}
            ),
            base="https://x.test",
        ),
        "new-relic logs (gzip)": lambda: new_relic_requests(
            events,
            NewRelicConfig.model_validate({"account_id": "a", "license_key": "k"}),
            received_ms=NOW,
            base="https://x.test",
        ),
        "honeycomb-logs (gzip)": lambda: honeycomb_requests(
            events,
            HoneycombLogsConfig.model_validate({"api_key": "k", "dataset": "d"}),
            base="https://x.test",
        ),
        "prometheus-remote-write (metric events)": lambda: remote_write_requests(
            metrics,
            PrometheusRemoteWriteConfig.model_validate({"endpoint": "http://x.test/"}),
            received_ms=NOW,
            totals=RunningTotals(),
        ),
    }
    print(f"destinations: {n} events, best of {args.rounds}")
    for name, function in encoders.items():
        seconds = _best(function, args.rounds)
        print(f"  {name:40s} {n / seconds:12,.0f} events/s")

    hec_body = b"".join(orjson.dumps({"event": event, "time": NOW / 1000}) for event in events)
    json_body = orjson.dumps(events)
    otlp = _otlp_body(events)
    remote_write = _remote_write_body(metrics)
    decoders: dict[str, Callable[[], object]] = {
        "floor: orjson.loads of a JSON array": lambda: orjson.loads(json_body),
        "splunk-hec /event stream": lambda: hec_events(hec_body, defaults={}),
        "open-telemetry-logs protobuf": lambda: otlp_log_events(
            otlp, content_type="application/x-protobuf"
        ),
        "prometheus-remote-write (inflated WriteRequest)": lambda: series_events(remote_write),
    }
    print(f"sources: {n} events, best of {args.rounds}")
    for name, function in decoders.items():
        seconds = _best(function, args.rounds)
        print(f"  {name:40s} {n / seconds:12,.0f} events/s")


if __name__ == "__main__":
    main()

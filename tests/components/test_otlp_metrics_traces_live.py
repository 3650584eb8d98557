"""The ``open-telemetry-metrics`` and ``open-telemetry-traces`` sources against a real
``tidegate serve``, fed by the OpenTelemetry SDK's own OTLP/HTTP exporters
(``opentelemetry-exporter-otlp-proto-http``: protobuf, plain and gzip). The pipeline
forwards the events as NDJSON to a recording receiver, where they are read back field
by field. The Python SDK has no OTLP/JSON exporter: the JSON form is the SDK's own
encoding of the same data (``opentelemetry.exporter.otlp.proto.common``) written in
OTLP's JSON mapping (hex ids), POSTed as an exporter would."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Any

import orjson
from google.protobuf import json_format  # type: ignore[import-untyped]
from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import Counter, MeterProvider
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    InMemoryMetricReader,
    MetricReader,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode
from tests.components.factories import wire_source
from tests.components.receiver import Receiver
from tests.gateway.factories import new_account_on
from tests.gateway.test_live_server import server_env
from tests.waiting import eventually

RESOURCE = Resource.create({"service.name": "checkout"})


def _record_metrics(reader: MetricReader) -> None:
    provider = MeterProvider(resource=RESOURCE, metric_readers=[reader])
    meter = provider.get_meter("shop", "1.0")
    meter.create_counter("orders", unit="1", description="orders placed").add(5, {"route": "/pay"})
    meter.create_histogram("latency", unit="s").record(0.3, {"route": "/pay"})
    meter.create_up_down_counter("queue").add(-2)
    assert provider.force_flush(30_000)
    if not isinstance(reader, InMemoryMetricReader):
        provider.shutdown()


def _record_spans(exporter: SpanExporter) -> None:
    provider = TracerProvider(resource=RESOURCE)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("shop", "1.0")
    with tracer.start_as_current_span("checkout", kind=SpanKind.SERVER) as root:
        root.set_attribute("order.id", 42)
        with tracer.start_as_current_span("charge", kind=SpanKind.CLIENT) as child:
            child.add_event("declined", {"reason": "card"})
            child.set_status(Status(StatusCode.ERROR, "card declined"))
    assert provider.force_flush(30_000)
    provider.shutdown()


def _otlp_json(message: Any) -> bytes:
    """OTLP's JSON mapping of a protobuf request: ids as hex, not base64."""
    document = json_format.MessageToDict(message)
    stack: list[Any] = [document]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            for name, value in item.items():
                if name in ("traceId", "spanId", "parentSpanId") and isinstance(value, str):
                    item[name] = base64.b64decode(value).hex()
                else:
                    stack.append(value)
    return orjson.dumps(document)


async def _wire(http: Any, database_url: str, source: str, receiver: Receiver) -> Any:
    account = await new_account_on(http, database_url, throttle=False)
    out = {"uri": f"{receiver.base}/in", "encoding": "ndjson"}
    return await wire_source(
        http, account, source, {}, [("out", "destination", "http", out, ["source"])]
    )


def _received(receiver: Receiver) -> list[dict[str, Any]]:
    return [
        orjson.loads(line)
        for request in receiver.requests
        for line in request.body.splitlines()
        if line
    ]


def _by_name(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {event["name"]: event for event in events}


def _check_metrics(events: list[dict[str, Any]], *, delta: bool = False) -> None:
    found = _by_name(events)
    assert set(found) == {"orders", "latency", "queue"}
    orders = found["orders"]
    assert orders["kind"] == ("incremental" if delta else "absolute")
    assert orders["value"] == {"type": "counter", "value": 5}
    assert orders["tags"] == {"route": "/pay"}
    assert orders["unit"] == "1"
    assert orders["description"] == "orders placed"
    assert orders["scope"] == {"name": "shop", "version": "1.0"}
    assert orders["resources"]["service.name"] == "checkout"
    assert orders["timestamp"] >= orders["start_timestamp"] > 1_700_000_000_000
    latency = found["latency"]["value"]
    assert latency["type"] == "histogram"
    histogram = latency["value"]
    assert histogram["count"] == 1
    assert histogram["sum"] == histogram["min"] == histogram["max"] == 0.3
    # The SDK's default bounds 0, 5, 10, ...: 0.3 is in the bucket of le 5.
    buckets = {bucket["upper_limit"]: bucket["count"] for bucket in histogram["buckets"]}
    assert buckets[0.0] == 0
    assert buckets[5.0] == buckets[10_000.0] == 1
    queue = found["queue"]
    assert queue["value"] == {"type": "gauge", "value": -2}
    assert queue["tags"] == {}


async def test_the_sdk_metric_exporter_delivers_data_points(
    live_server_factory: Any, tmp_path: Path
) -> None:
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'otlp-metrics.sqlite3'}"
    env = server_env(database_url, TIDEGATE_DESTINATION_ALLOW="127.0.0.1/32")
    server = live_server_factory(env=env)
    async with Receiver() as receiver, server.async_client() as http:
        wired = await _wire(http, database_url, "open-telemetry-metrics", receiver)
        endpoint = f"{server.base_url}/gateway/{wired.route_id}/v1/metrics"
        headers = {"Authorization": f"Token {wired.key}"}

        def export(compression: Compression, *, delta: bool = False) -> None:
            temporality = {Counter: AggregationTemporality.DELTA} if delta else None
            exporter = OTLPMetricExporter(
                endpoint=endpoint,
                headers=headers,
                compression=compression,
                timeout=30,
                preferred_temporality=temporality,
            )
            reader = PeriodicExportingMetricReader(exporter, export_interval_millis=3_600_000)
            _record_metrics(reader)

        await asyncio.to_thread(export, Compression.NoCompression)
        events = await eventually(lambda: _received(receiver), what="the metric events")
        _check_metrics(events)
        receiver.requests.clear()

        await asyncio.to_thread(export, Compression.Gzip, delta=True)
        events = await eventually(lambda: _received(receiver), what="the gzip metric events")
        _check_metrics(events, delta=True)
        receiver.requests.clear()

        reader = InMemoryMetricReader()
        _record_metrics(reader)
        data = reader.get_metrics_data()
        assert data is not None
        sent = await http.post(
            endpoint,
            content=_otlp_json(encode_metrics(data)),
            headers={**headers, "Content-Type": "application/json"},
        )
        assert sent.status_code == 200, sent.text
        assert sent.json() == {}
        _check_metrics(_received(receiver))

        refused = await http.post(
            endpoint,
            content=b"not protobuf",
            headers={**headers, "Content-Type": "application/x-protobuf"},
        )
        assert refused.status_code == 400, refused.text


def _check_spans(events: list[dict[str, Any]]) -> None:
    found = _by_name(events)
    assert set(found) == {"checkout", "charge"}
    root, child = found["checkout"], found["charge"]
    assert root["kind"] == "server"
    assert child["kind"] == "client"
    assert "parent_span_id" not in root
    assert child["parent_span_id"] == root["span_id"]
    assert child["trace_id"] == root["trace_id"]
    assert len(root["trace_id"]) == 32
    assert len(root["span_id"]) == 16
    assert root["attributes"] == {"order.id": 42}
    assert root["status"] == {"code": "unset"}
    assert child["status"] == {"code": "error", "message": "card declined"}
    [event] = child["events"]
    assert event["name"] == "declined"
    assert event["attributes"] == {"reason": "card"}
    assert root["scope"] == {"name": "shop", "version": "1.0"}
    assert root["resources"]["service.name"] == "checkout"
    assert root["timestamp"] == root["start_time_unix_nano"] // 1_000_000
    assert root["end_time_unix_nano"] >= child["end_time_unix_nano"]
    assert root["duration_ms"] == (root["end_time_unix_nano"] - root["start_time_unix_nano"]) / 1e6


async def test_the_sdk_span_exporter_delivers_spans(
    live_server_factory: Any, tmp_path: Path
) -> None:
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'otlp-traces.sqlite3'}"
    env = server_env(database_url, TIDEGATE_DESTINATION_ALLOW="127.0.0.1/32")
    server = live_server_factory(env=env)
    async with Receiver() as receiver, server.async_client() as http:
        wired = await _wire(http, database_url, "open-telemetry-traces", receiver)
        endpoint = f"{server.base_url}/gateway/{wired.route_id}/v1/traces"
        headers = {"Authorization": f"Token {wired.key}"}
        for compression in (Compression.NoCompression, Compression.Gzip):
            exporter = OTLPSpanExporter(
                endpoint=endpoint, headers=headers, compression=compression, timeout=30
            )
            await asyncio.to_thread(_record_spans, exporter)
            events = await eventually(
                lambda: len(_received(receiver)) >= 2 and _received(receiver),
                what=f"the spans ({compression.value})",
            )
            _check_spans(events)
            receiver.requests.clear()

        memory = InMemorySpanExporter()
        _record_spans(memory)
        sent = await http.post(
            endpoint,
            content=_otlp_json(encode_spans(memory.get_finished_spans())),
            headers={**headers, "Content-Type": "application/json"},
        )
        assert sent.status_code == 200, sent.text
        assert sent.json() == {}
        _check_spans(_received(receiver))

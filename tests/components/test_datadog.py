"""The ``mezmo-datadog-source`` source and the ``datadog-metrics`` destination.

The source is sent what a Datadog Agent sends (its own request shapes: the HTTP logs
intake's JSON array as ``pkg/logs/processor/json.go`` encodes it, the ``MetricPayload``
protobuf of ``agent-payload``'s ``agent_payload.proto`` written here field by field,
not with the server's descriptor, the v1 series JSON; zstd, gzip and zlib bodies;
``DD-API-KEY``). The destination delivers to a protocol-exact receiver of Datadog's
Metrics API (``vendor_apis.datadog_metrics``) that the operator pointed the type at,
compared byte for byte. Both meet in one pipeline: an Agent's metrics and logs,
forwarded to Datadog."""

from __future__ import annotations

import gzip
import json
import struct
import zlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import cramjam
import orjson
import pytest
from tests.components.factories import wire_source
from tests.components.receiver import Receiver, Request
from tests.components.vendor_apis import Api, datadog, datadog_metrics
from tests.conftest import AppClient, make_settings, running_client
from tests.gateway.factories import Wired, new_account

DD_KEY = "dd-api-key-0123"
NOW_S = 1_735_787_045


@dataclass
class Env:
    client: AppClient
    logs: Api
    metrics: Api
    datadog: Receiver
    sink: Receiver


@pytest.fixture(scope="module")
async def env(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Env]:
    logs, metrics = datadog(DD_KEY), datadog_metrics(DD_KEY)

    def respond(request: Request) -> tuple[int, bytes]:
        api = logs if request.target.startswith("/api/v2/logs") else metrics
        return api.respond(request)

    async with Receiver(respond=respond) as dd, Receiver(script=[200]) as sink:
        settings = make_settings(
            database_url,
            tmp_path_factory.mktemp("data"),
            destination_allow="127.0.0.1/32",
            destination_endpoints=f"datadog-logs={dd.base},datadog-metrics={dd.base}",
        )
        async with running_client(settings) as http:
            yield Env(http, logs, metrics, dd, sink)


def _metrics_config(**fields: Any) -> dict[str, Any]:
    # destinations/datadog_metrics.go: DatadogMetricsFromModel sends all three.
    return {"api_key": DD_KEY, "site": "us1", "ack_enabled": True, **fields}


async def _agent_pipeline(env: Env, destination: str, config: dict[str, Any]) -> Wired:
    account = await new_account(env.client, throttle=False)
    return await wire_source(
        env.client, account, "mezmo-datadog-source", {},
        [("out", "destination", destination, config, ["source"])],
    )  # fmt: skip


def _agent_headers(wired: Wired, encoding: str, content_type: str) -> dict[str, str]:
    # What the Agent's HTTP destinations set (the key is the route's access key).
    return {
        "DD-API-KEY": wired.key,
        "Content-Type": content_type,
        "Content-Encoding": encoding,
        "DD-Agent-Version": "7.60.0",
        "User-Agent": "datadog-agent/7.60.0",
    }


def _compress(body: bytes, encoding: str) -> bytes:
    if encoding == "zstd":
        return bytes(cramjam.zstd.compress(body))
    if encoding == "gzip":
        return gzip.compress(body)
    return zlib.compress(body)  # the Agent's "deflate": zlib


# The Agent's logs: pkg/logs/processor/json.go's jsonPayload, in its field order.
AGENT_LOGS = (
    b'[{"message":"GET /health 200","status":"info","timestamp":1735787045678,'
    b'"hostname":"web-1","service":"api","ddsource":"nginx","ddtags":"env:prod,team:a"},'
    b'{"message":"disk full \xe2\x9c\x97","status":"error","timestamp":1735787046000,'
    b'"hostname":"web-1","service":"api","ddsource":"syslog","ddtags":""}]'
)


@pytest.mark.parametrize("encoding", ["zstd", "gzip"])
async def test_agent_logs_are_forwarded_to_datadog_unchanged(env: Env, encoding: str) -> None:
    wired = await _agent_pipeline(
        env, "datadog-logs", {"api_key": DD_KEY, "site": "us1", "compression": "gzip"}
    )
    headers = {
        **_agent_headers(wired, encoding, "application/json"),
        "DD-PROTOCOL": "agent-json",
        "DD-EVP-ORIGIN": "agent",
    }
    before = len(env.datadog.requests)
    response = await env.client.post(
        f"{wired.url}/api/v2/logs", content=_compress(AGENT_LOGS, encoding), headers=headers
    )
    assert response.status_code == 200, response.text
    assert response.content == b"{}"
    [forwarded] = env.datadog.requests[before:]
    assert forwarded.target == "/api/v2/logs"
    assert forwarded.header("DD-API-KEY") == DD_KEY
    assert gzip.decompress(forwarded.body) == AGENT_LOGS


async def test_a_wrong_api_key_is_refused(env: Env) -> None:
    wired = await _agent_pipeline(env, "blackhole", {})
    headers = {**_agent_headers(wired, "gzip", "application/json"), "DD-API-KEY": "nope"}
    response = await env.client.post(
        f"{wired.url}/api/v2/logs", content=gzip.compress(AGENT_LOGS), headers=headers
    )
    assert response.status_code == 401


# A minimal protobuf writer (the wire format: varints, length-delimited fields, doubles).
def _varint(number: int) -> bytes:
    number &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte, number = number & 0x7F, number >> 7
        out.append(byte | (0x80 if number else 0))
        if not number:
            return bytes(out)


def _field(number: int, wire: int, payload: bytes) -> bytes:
    key = _varint(number << 3 | wire)
    if wire == 2:
        return key + _varint(len(payload)) + payload
    return key + payload


def _series(
    metric: str,
    type_: int,
    points: list[tuple[int, float]],
    tags: list[str],
    host: str,
    interval: int = 0,
    unit: str = "",
) -> bytes:
    # agent_payload.proto: MetricSeries {resources 1, metric 2, tags 3, points 4, type 5,
    # unit 6, source_type_name 7, interval 8}; Resource {type 1, name 2};
    # MetricPoint {value 1 (double), timestamp 2 (int64)}.
    resource = _field(1, 2, b"host") + _field(2, 2, host.encode())
    body = _field(1, 2, resource) + _field(2, 2, metric.encode())
    body += b"".join(_field(3, 2, tag.encode()) for tag in tags)
    for seconds, value in points:
        point = _field(1, 1, struct.pack("<d", value)) + _field(2, 0, _varint(seconds))
        body += _field(4, 2, point)
    body += _field(5, 0, _varint(type_))
    if unit:
        body += _field(6, 2, unit.encode())
    body += _field(7, 2, b"System")
    if interval:
        body += _field(8, 0, _varint(interval))
    return _field(1, 2, body)


AGENT_SERIES = (
    _series("system.load.1", 3, [(NOW_S, 0.5), (NOW_S + 10, 0.75)], ["env:prod", "role"], "web-1")
    + _series("http.requests", 1, [(NOW_S, 12.0)], ["env:prod"], "web-1", interval=10)
    + _series("net.bytes_rcvd", 2, [(NOW_S, 2.5)], [], "web-2", interval=10, unit="byte")
)


async def test_agent_series_v2_protobuf_reach_datadog_metrics(env: Env) -> None:
    """An Agent's v2 series (protobuf, zstd) through tidegate into Datadog's Metrics
    API: gauges stay gauges, a count a count (its interval kept), a rate is counted as
    its value times the interval, tags and the host resource as they came."""
    wired = await _agent_pipeline(env, "datadog-metrics", _metrics_config())
    before = len(env.datadog.requests)
    response = await env.client.post(
        f"{wired.url}/api/v2/series",
        content=_compress(AGENT_SERIES, "zstd"),
        headers=_agent_headers(wired, "zstd", "application/x-protobuf"),
    )
    assert response.status_code == 200, response.text
    assert response.json() == {"errors": []}
    [forwarded] = env.datadog.requests[before:]
    assert forwarded.target == "/api/v2/series"
    assert forwarded.header("Content-Encoding") == "gzip"
    host = [{"name": "web-1", "type": "host"}]
    assert gzip.decompress(forwarded.body) == orjson.dumps(
        {
            "series": [
                {"metric": "system.load.1", "type": 3,
                 "points": [{"timestamp": NOW_S, "value": 0.5}],
                 "tags": ["env:prod", "role"], "resources": host},
                {"metric": "system.load.1", "type": 3,
                 "points": [{"timestamp": NOW_S + 10, "value": 0.75}],
                 "tags": ["env:prod", "role"], "resources": host},
                {"metric": "http.requests", "type": 1,
                 "points": [{"timestamp": NOW_S, "value": 12.0}],
                 "tags": ["env:prod"], "resources": host, "interval": 10},
                {"metric": "net.bytes_rcvd", "type": 1,
                 "points": [{"timestamp": NOW_S, "value": 25.0}],
                 "resources": [{"name": "web-2", "type": "host"}], "interval": 10},
            ]
        }
    )  # fmt: skip


async def _events_at_sink(env: Env, wired: Wired, path: str, body: bytes, headers: Any) -> Any:
    before = len(env.sink.requests)
    response = await env.client.post(f"{wired.url}/{path}", content=body, headers=headers)
    assert response.status_code == 200, response.text
    [request] = env.sink.requests[before:]
    return response, json.loads(request.body)


async def test_agent_series_become_metric_events(env: Env) -> None:
    """v1 series (JSON, zlib) and v2 series (JSON, as the public API takes them):
    each point one metric event."""
    sink = {"uri": f"{env.sink.base}/in", "encoding": "json"}
    wired = await _agent_pipeline(env, "http", sink)
    v1 = {
        "series": [
            {"metric": "system.cpu.user", "points": [[NOW_S, 12.5]], "tags": ["env:prod"],
             "host": "web-1", "type": "gauge", "interval": 0, "source_type_name": "System"},
            {"metric": "app.hits", "points": [[NOW_S, 4]], "tags": [], "host": "web-1",
             "type": "rate", "interval": 15},
        ]
    }  # fmt: skip
    response, events = await _events_at_sink(
        env, wired, "api/v1/series", zlib.compress(json.dumps(v1).encode()),
        _agent_headers(wired, "deflate", "application/json"),
    )  # fmt: skip
    assert response.json() == {"status": "ok"}
    assert events == [
        {"name": "system.cpu.user", "kind": "absolute",
         "value": {"type": "gauge", "value": 12.5}, "tags": {"env": "prod", "host": "web-1"},
         "timestamp": NOW_S * 1000, "source_type_name": "System"},
        {"name": "app.hits", "kind": "incremental", "value": {"type": "counter", "value": 60},
         "tags": {"host": "web-1"}, "timestamp": NOW_S * 1000, "interval_ms": 15_000},
    ]  # fmt: skip
    v2 = {
        "series": [
            {"metric": "queue.depth", "type": 3, "points": [{"timestamp": NOW_S, "value": 7}],
             "resources": [{"name": "q-1", "type": "host"}], "tags": ["queue:jobs"],
             "unit": "item"},
            {"metric": "jobs.done", "type": 1, "interval": 60,
             "points": [{"timestamp": NOW_S, "value": 3}, {"timestamp": NOW_S + 60, "value": None}]},
        ]
    }  # fmt: skip
    body = json.dumps(v2).encode()
    response, events = await _events_at_sink(
        env, wired, "api/v2/series", body, _agent_headers(wired, "identity", "application/json")
    )
    assert response.json() == {"errors": []}
    assert events == [
        {"name": "queue.depth", "kind": "absolute", "value": {"type": "gauge", "value": 7},
         "tags": {"queue": "jobs", "host": "q-1"}, "timestamp": NOW_S * 1000, "unit": "item"},
        {"name": "jobs.done", "kind": "incremental", "value": {"type": "counter", "value": 3},
         "tags": {}, "timestamp": NOW_S * 1000, "interval_ms": 60_000},
    ]  # fmt: skip


async def test_bad_agent_bodies_are_400s(env: Env) -> None:
    wired = await _agent_pipeline(env, "blackhole", {})
    headers = _agent_headers(wired, "identity", "application/x-protobuf")
    for path, body in (
        ("api/v2/series", b"\xff\xff\xff"),
        ("api/v1/series", b'{"series": {}}'),
        ("api/v1/series", b'{"series": [{"metric": "m", "points": [[1]]}]}'),
    ):
        response = await env.client.post(f"{wired.url}/{path}", content=body, headers=headers)
        assert response.status_code == 400, (path, response.text)
    sketches = await env.client.post(f"{wired.url}/api/beta/sketches", content=b"", headers=headers)
    assert sketches.status_code == 404


METRIC_EVENTS = [
    {"name": "orders", "namespace": "shop", "kind": "incremental",
     "value": {"type": "counter", "value": 3}, "tags": {"region": "eu", "host": "h1"},
     "timestamp": 1_735_787_045_678, "interval_ms": 60_000},
    {"name": "temperature", "kind": "absolute", "value": {"type": "gauge", "value": 21.5},
     "tags": {"flag": ""}, "timestamp": 1_735_787_045_000},
    {"name": "latency", "kind": "absolute",
     "value": {"type": "histogram", "value": {"count": 4, "sum": 2.5, "buckets": []}}},
    {"message": "not a metric: skipped"},
]  # fmt: skip


async def test_datadog_metrics_from_metric_events(env: Env) -> None:
    account = await new_account(env.client, throttle=False)
    wired = await wire_source(
        env.client, account, "http", {},
        [("out", "destination", "datadog-metrics", _metrics_config(), ["source"])],
    )  # fmt: skip
    before = len(env.datadog.requests)
    sent = await env.client.post(wired.url, json=METRIC_EVENTS, headers=wired.auth)
    assert sent.status_code == 200, sent.text
    [request] = env.datadog.requests[before:]
    assert request.header("DD-API-KEY") == DD_KEY
    assert request.header("Content-Type") == "application/json"
    document = orjson.loads(gzip.decompress(request.body))
    received_s = document["series"][2]["points"][0]["timestamp"]
    assert document == {
        "series": [
            {"metric": "shop.orders", "type": 1,
             "points": [{"timestamp": 1_735_787_045, "value": 3}], "tags": ["region:eu"],
             "resources": [{"name": "h1", "type": "host"}], "interval": 60},
            {"metric": "temperature", "type": 3,
             "points": [{"timestamp": 1_735_787_045, "value": 21.5}], "tags": ["flag"]},
            {"metric": "latency.count", "type": 3,
             "points": [{"timestamp": received_s, "value": 4}]},
            {"metric": "latency.sum", "type": 3,
             "points": [{"timestamp": received_s, "value": 2.5}]},
        ]
    }  # fmt: skip


async def test_datadog_metrics_failures(env: Env) -> None:
    account = await new_account(env.client, throttle=False)
    steps = [("out", "destination", "datadog-metrics", _metrics_config(), ["source"])]
    wired = await wire_source(env.client, account, "http", {}, steps)
    before = len(env.datadog.requests)
    env.metrics.faults[:] = [500, 429]
    sent = await env.client.post(wired.url, json=METRIC_EVENTS[:1], headers=wired.auth)
    assert sent.status_code == 200, sent.text
    assert len(env.datadog.requests[before:]) == 3
    bad = [("out", "destination", "datadog-metrics", _metrics_config(api_key="x"), ["source"])]
    wired = await wire_source(env.client, account, "http", {}, bad)
    before = len(env.datadog.requests)
    sent = await env.client.post(wired.url, json=METRIC_EVENTS[:1], headers=wired.auth)
    assert sent.status_code == 503, sent.text
    assert len(env.datadog.requests[before:]) == 1  # a 403 is final


def test_datadog_metrics_batches_and_sites() -> None:
    from tidegate.components.destinations.datadog_metrics import (
        DatadogMetricsConfig,
        datadog_metric_requests,
    )

    config = DatadogMetricsConfig.model_validate(_metrics_config(site="eu1"))
    events = [
        {"name": f"m{n}", "kind": "absolute", "value": {"type": "gauge", "value": n},
         "tags": {"pad": "x" * 200}, "timestamp": 1_735_787_045_000}
        for n in range(5_000)
    ]  # fmt: skip
    requests = datadog_metric_requests(events, config, received_ms=0, base="https://api.eu")
    assert len(requests) > 1
    seen = []
    for request in requests:
        assert request.url == "https://api.eu/api/v2/series"
        body = gzip.decompress(request.body)
        assert len(body) <= 512_000
        assert len(request.body) <= 512_000
        seen += [series["metric"] for series in orjson.loads(body)["series"]]
    assert seen == [f"m{n}" for n in range(5_000)]

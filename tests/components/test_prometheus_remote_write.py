"""The ``prometheus-remote-write`` source and destination against Debian's Prometheus
(``tests/components/prometheus_process.py``), through a live ``tidegate serve``:

* the destination writes metric events into a Prometheus started with
  ``--web.enable-remote-write-receiver``; they come back through its query API with
  their labels and values (an incremental counter as its running total);
* a Prometheus scraping itself remote-writes to the source (its ``remote_write`` block
  pointed at the route, the access key as ``authorization``), and the pipeline forwards
  the samples to the receiving Prometheus: the same series, labels and values arrive.

The wire itself (headers, snappy, the ``WriteRequest``) is checked byte for byte
against a recording receiver."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import cramjam
import orjson
import pytest
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from tests.components.factories import wire_source
from tests.components.prometheus_process import prometheus
from tests.conftest import free_port
from tests.gateway.factories import new_account_on, stored_lines
from tests.gateway.test_live_server import server_env
from tests.waiting import eventually

from tidegate.components.destinations.prometheus_remote_write import (
    PrometheusRemoteWriteConfig,
    RunningTotals,
    remote_write_requests,
)
from tidegate.components.prometheus_wire import WriteRequest, series_events

RECEIVER_CONFIG = "global:\n  scrape_interval: 1h\n"
NO_AUTH = {"strategy": "none"}  # what the provider sends without an auth block


def _now_ms() -> int:
    return int(time.time() * 1000)


def _metric(name: str, type_: str, value: Any, **fields: Any) -> dict[str, Any]:
    return {"name": name, "kind": "absolute", "value": {"type": type_, "value": value}, **fields}


async def _one(prom: Any, expression: str) -> dict[str, Any]:
    async def found() -> list[dict[str, Any]]:
        return await prom.query(expression)

    [series] = await eventually(found, timeout=60, what=f"{expression} in Prometheus")
    return series


@pytest.fixture
def live(live_server_factory: Any, tmp_path: Path) -> tuple[Any, str]:
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'prw.sqlite3'}"
    env = server_env(database_url, TIDEGATE_DESTINATION_ALLOW="127.0.0.1/32")
    return live_server_factory(env=env), database_url


async def test_metric_events_arrive_in_prometheus(live: tuple[Any, str], tmp_path: Path) -> None:
    server, database_url = live
    async with (
        prometheus(tmp_path / "receiver", RECEIVER_CONFIG, receiver=True) as receiver,
        server.async_client() as http,
    ):
        account = await new_account_on(http, database_url, throttle=False)
        config = {
            "ack_enabled": True,
            "endpoint": f"{receiver.base}/api/v1/write",
            "auth": NO_AUTH,
        }
        wired = await wire_source(
            http,
            account,
            "http",
            {},
            [("prom", "destination", "prometheus-remote-write", config, ["source"])],
        )
        now = _now_ms()
        orders = {
            "name": "orders",
            "namespace": "shop",
            "kind": "incremental",
            "value": {"type": "counter", "value": 2},
            "tags": {"region": "eu"},
            "timestamp": now - 2_000,
        }
        events = [
            orders,
            {**orders, "value": {"type": "counter", "value": 3}, "timestamp": now - 1_000},
            _metric("temperature", "gauge", 21.5, tags={"room": "lab", "floor": 2}, timestamp=now),
            _metric(
                "latency",
                "histogram",
                {
                    "count": 3,
                    "sum": 1.25,
                    "buckets": [{"upper_limit": 0.5, "count": 1}, {"upper_limit": 1, "count": 2}],
                },
                timestamp=now,
            ),
            {"message": "not a metric: skipped"},
        ]
        sent = await http.post(wired.url, json=events, headers=wired.auth)
        assert sent.status_code == 200, sent.text

        total = await _one(receiver, 'shop_orders{region="eu"}')
        assert total["value"][1] == "5"
        assert total["metric"] == {"__name__": "shop_orders", "region": "eu"}
        gauge = await _one(receiver, "temperature")
        assert gauge["metric"] == {"__name__": "temperature", "room": "lab", "floor": "2"}
        assert gauge["value"][1] == "21.5"
        assert (await _one(receiver, 'latency_bucket{le="+Inf"}'))["value"][1] == "3"
        assert (await _one(receiver, 'latency_bucket{le="1.0"}'))["value"][1] == "2"
        assert (await _one(receiver, "latency_sum"))["value"][1] == "1.25"

        # The running total carries on across deliveries of the node.
        later = {**orders, "value": {"type": "counter", "value": 4}, "timestamp": _now_ms()}
        sent = await http.post(wired.url, json=[later], headers=wired.auth)
        assert sent.status_code == 200, sent.text

        async def nine() -> bool:
            found = await receiver.query('shop_orders{region="eu"}')
            return bool(found) and found[0]["value"][1] == "9"

        await eventually(nine, timeout=60, what="the running total 9")

        # A sample Prometheus refuses (out of order for its series) fails the delivery:
        # the sender is asked to retry.
        stale = {**orders, "timestamp": now - 60_000}
        refused = await http.post(wired.url, json=[stale], headers=wired.auth)
        assert refused.status_code == 503, refused.text


async def test_prometheus_remote_writes_through_a_pipeline(
    live: tuple[Any, str], tmp_path: Path
) -> None:
    """Prometheus A scrapes itself and remote-writes to tidegate's source; the pipeline
    sends the samples on to Prometheus B: B holds A's series, labels and values."""
    server, database_url = live
    async with (
        prometheus(tmp_path / "receiver", RECEIVER_CONFIG, receiver=True) as receiver,
        server.async_client() as http,
    ):
        account = await new_account_on(http, database_url, throttle=False)
        forward = {
            "ack_enabled": True,
            "endpoint": f"{receiver.base}/api/v1/write",
            "auth": NO_AUTH,
        }
        wired = await wire_source(
            http,
            account,
            "prometheus-remote-write",
            {},
            [("prom", "destination", "prometheus-remote-write", forward, ["source"])],
        )
        port = free_port()  # the sender scrapes itself
        sender_config = (
            "global:\n  scrape_interval: 1s\n"
            "scrape_configs:\n"
            "  - job_name: self\n"
            f"    static_configs:\n      - targets: ['127.0.0.1:{port}']\n"
            "remote_write:\n"
            f"  - url: {server.base_url}/gateway/{wired.route_id}/api/v1/write\n"
            "    authorization:\n"
            "      type: Token\n"
            f"      credentials: {wired.key}\n"
            "    queue_config:\n      batch_send_deadline: 1s\n"
        )
        async with prometheus(tmp_path / "sender", sender_config, port=port) as sender:
            forwarded = await _one(receiver, 'prometheus_build_info{job="self"}')
            own = await _one(sender, 'prometheus_build_info{job="self"}')
            assert forwarded["metric"] == own["metric"]
            assert forwarded["value"][1] == own["value"][1] == "1"
            # Every scraped series of the job reaches B (up, scrape_duration_seconds...).
            up = await _one(receiver, 'up{job="self"}')
            assert up["value"][1] == "1"


def test_the_wire_is_remote_write_1_0() -> None:
    config = PrometheusRemoteWriteConfig.model_validate(
        {
            "ack_enabled": False,
            "endpoint": "http://prometheus-remote-write.dev",
            "auth": {"strategy": "basic", "user": "user", "password": "password", "token": ""},
        }
    )
    events = [
        _metric("b", "gauge", 2, tags={"z": "1", "a": "2"}, timestamp=1_735_787_046_000),
        _metric("b", "gauge", 1, tags={"a": "2", "z": "1"}, timestamp=1_735_787_045_000),
        {"message": "skipped"},
    ]
    [request] = remote_write_requests(events, config, received_ms=5, totals=RunningTotals())
    assert request.method == "POST"
    assert request.url == "http://prometheus-remote-write.dev/"
    assert request.headers == (
        ("Content-Type", "application/x-protobuf"),
        ("Content-Encoding", "snappy"),
        ("X-Prometheus-Remote-Write-Version", "0.1.0"),
        ("User-Agent", "tidegate"),
        ("Authorization", "Basic dXNlcjpwYXNzd29yZA=="),
    )
    body = bytes(cramjam.snappy.decompress_raw(request.body))
    expected = WriteRequest()
    series = expected.timeseries.add()
    for name, value in (("__name__", "b"), ("a", "2"), ("z", "1")):
        series.labels.add(name=name, value=value)
    series.samples.add(value=1, timestamp=1_735_787_045_000)
    series.samples.add(value=2, timestamp=1_735_787_046_000)
    assert body == expected.SerializeToString()
    assert series_events(body) == [
        {
            "name": "b",
            "kind": "absolute",
            "value": {"type": "gauge", "value": v},
            "tags": {"a": "2", "z": "1"},
            "timestamp": t,
        }
        for v, t in ((1.0, 1_735_787_045_000), (2.0, 1_735_787_046_000))
    ]


async def test_the_source_refuses_what_is_not_remote_write(live: tuple[Any, str]) -> None:
    server, database_url = live
    async with server.async_client() as http:
        account = await new_account_on(http, database_url, throttle=False)
        wired = await wire_source(http, account, "prometheus-remote-write", {})
        url = f"{wired.url}/api/v1/write"
        protobuf = {**wired.auth, "Content-Type": "application/x-protobuf"}
        not_snappy = await http.post(
            url, content=b"\x0a\x05hello", headers={**protobuf, "Content-Encoding": "snappy"}
        )
        assert not_snappy.status_code == 400, not_snappy.text
        garbage = bytes(cramjam.snappy.compress_raw(b"\xff\xff\xff"))
        not_protobuf = await http.post(
            url, content=garbage, headers={**protobuf, "Content-Encoding": "snappy"}
        )
        assert not_protobuf.status_code == 400, not_protobuf.text
        # Claims 1 GiB inflated in a handful of bytes: refused before inflating.
        bomb = b"\x80\x80\x80\x80\x04" + b"\x00" * 8
        too_large = await http.post(
            url, content=bomb, headers={**protobuf, "Content-Encoding": "snappy"}
        )
        assert too_large.status_code == 413, too_large.text
        # With metadata in the same request, a counter family's samples are counters.
        request = WriteRequest()
        request.metadata.add(type=1, metric_family_name="jobs_total")
        series = request.timeseries.add()
        series.labels.add(name="__name__", value="jobs_total")
        series.samples.add(value=7, timestamp=1_735_787_045_678)
        body = bytes(cramjam.snappy.compress_raw(request.SerializeToString()))
        taken = await http.post(
            wired.url, content=body, headers={**protobuf, "Content-Encoding": "snappy"}
        )
        assert taken.status_code == 200, taken.text
    [line] = await stored_lines(database_url, account.account_id)
    assert orjson.loads(line.line) == {
        "name": "jobs_total",
        "kind": "absolute",
        "value": {"type": "counter", "value": 7.0},
        "tags": {},
        "timestamp": 1_735_787_045_678,
    }


async def test_otlp_metrics_reach_prometheus_through_a_pipeline(
    live: tuple[Any, str], tmp_path: Path
) -> None:
    """The OpenTelemetry SDK's metric exporter -> the open-telemetry-metrics source ->
    this destination -> Prometheus: a monotonic sum is a counter series, a histogram
    its classic ``_bucket``/``_sum``/``_count`` series."""
    server, database_url = live
    async with (
        prometheus(tmp_path / "receiver", RECEIVER_CONFIG, receiver=True) as receiver,
        server.async_client() as http,
    ):
        account = await new_account_on(http, database_url, throttle=False)
        forward = {"endpoint": f"{receiver.base}/api/v1/write", "auth": NO_AUTH}
        wired = await wire_source(
            http,
            account,
            "open-telemetry-metrics",
            {},
            [("prom", "destination", "prometheus-remote-write", forward, ["source"])],
        )
        exporter = OTLPMetricExporter(
            endpoint=f"{server.base_url}/gateway/{wired.route_id}/v1/metrics",
            headers={"Authorization": f"Token {wired.key}"},
            timeout=30,
        )

        def record() -> None:
            reader = PeriodicExportingMetricReader(exporter, export_interval_millis=3_600_000)
            provider = MeterProvider(metric_readers=[reader])
            meter = provider.get_meter("shop")
            meter.create_counter("orders").add(5, {"route": "/pay"})
            meter.create_histogram("latency").record(7, {"route": "/pay"})
            assert provider.force_flush(30_000)
            provider.shutdown()

        await asyncio.to_thread(record)
        orders = await _one(receiver, "orders")
        assert orders["metric"] == {"__name__": "orders", "route": "/pay"}
        assert orders["value"][1] == "5"
        assert (await _one(receiver, 'latency_bucket{le="5.0"}'))["value"][1] == "0"
        assert (await _one(receiver, 'latency_bucket{le="10.0"}'))["value"][1] == "1"
        assert (await _one(receiver, 'latency_bucket{le="+Inf"}'))["value"][1] == "1"
        assert (await _one(receiver, "latency_sum"))["value"][1] == "7"

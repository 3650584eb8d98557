"""Benchmark: events per second and CPU per 1,000 events of published pipelines delivering
into each destination's real receiver, beside two floors measured in the same run:

* the **raw floor** of each destination: the same events delivered to the same receiver
  by the simplest raw client, httpx replaying the exact requests the destination makes
  for one batch (its own encoder's for S3, Azure and remote write; for the HTTP-shaped
  APIs the requests the receiver took from the pipeline), from as many connections;
* the **no-processor floor**: ``source -> blackhole`` on the same server, and beside it
  the five-processor pipeline of ``bench_gateway.py`` (``parse -> filter -> map-fields ->
  throttle -> route -> blackhole``).

    python bench/bench_destination_receivers.py [--seconds 3] [--events 100] [--rounds 3]
        [--only NAME ...]   # only the rows whose name holds NAME (the floors stay)

Receivers: moto's S3 (server mode), Azurite's Blob service, Debian's Prometheus
(``--web.enable-remote-write-receiver``; the events carry fixed timestamps, so it takes
the same samples again from every request after the first), and for Datadog, New Relic,
Honeycomb, Loki, Elasticsearch, Splunk HEC, the four Google
Cloud APIs (``TIDEGATE_DESTINATION_ENDPOINTS``; the service account's ``token_uri``
too) and the http destination, the HTTP receiver of ``receivers.py`` answering each API
as it does on success. ``mezmo`` stores lines in the server's own store: its raw floor is
the same lines posted to ``/logs/ingest``. The Kafka destination is not measured: no
broker runs here.

One ``tidegate serve`` (SQLite, one worker); every destination ``ack_enabled: true`` (the
gateway answers after delivery). Load: a separate process posting one JSON array of
``--events`` events per request from 16 connections; interleaved rounds, the median of
each. CPU per 1,000 events: the server's, the receiver's and the client's (the load
process for a pipeline, the raw client for a floor). No timing here is a pass/fail test.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import boto3
import httpx
import orjson
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from bench_gateway import FIVE, check
from harness import (
    Server,
    api_data,
    api_json,
    cli_enterprise_token,
    cpu_seconds,
    ingestion_key,
    new_account,
    process_tree,
    server_env,
    start_moto,
    wire,
)
from receivers import (
    Replayed,
    Request,
    azurite_connection_string,
    captured,
    load_arguments,
    make_azure_container,
    metric_events,
    post_json,
    put_objects,
    received,
    replay,
    start_azurite,
    start_prometheus,
    start_receiver,
)
from tidegate.clock import now_ms
from tidegate.components.destinations.azure_blob_storage import (
    AzureBlobStorageConfig,
    azure_blob_requests,
)
from tidegate.components.destinations.prometheus_remote_write import (
    PrometheusRemoteWriteConfig,
    remote_write_requests,
)
from tidegate.components.destinations.s3 import S3DestinationConfig, s3_requests
from tidegate.components.destinations.wire import WireRequest

VENDOR_TYPES = (
    "datadog-logs",
    "datadog-metrics",
    "new-relic",
    "honeycomb-logs",
    "gcp-cloud-storage",
    "gcp-cloud-operations",
    "gcp-cloud-pubsub",
    "gcp-cloud-monitoring",
)


@dataclass
class Receivers:
    pids: dict[str, int]
    """Receiver name -> its process."""
    http: str
    s3: str
    azure: str
    prometheus: str
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def stop(self) -> None:
        for process in self.processes:
            process.terminate()
            process.wait(timeout=30)


def start_receivers(work: Path) -> Receivers:
    started: list[tuple[subprocess.Popen[bytes], str]] = []
    try:
        for start in (start_receiver, start_moto, lambda: start_azurite(work)):
            started.append(start())
        started.append(start_prometheus(work))
    except BaseException:
        for process, _ in started:
            process.terminate()
        raise
    (http, http_base), (moto, s3), (azurite, azure), (prometheus, prometheus_base) = started
    boto3.client(
        "s3", endpoint_url=s3, region_name="us-east-1",
        aws_access_key_id="bench", aws_secret_access_key="bench",
    ).create_bucket(Bucket="bench")  # fmt: skip
    make_azure_container(azure, "logs")
    return Receivers(
        {"http": http.pid, "moto": moto.pid, "azurite": azurite.pid, "prometheus": prometheus.pid},
        http_base,
        s3,
        azure,
        prometheus_base,
        [process for process, _ in started],
    )


def credentials_json(token_uri: str) -> str:
    """A service account key file (a fresh RSA key) whose ``token_uri`` is given."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    return json.dumps(
        {
            "type": "service_account",
            "project_id": "proj-1",
            "private_key_id": "bench",
            "private_key": pem,
            "client_email": "bench@proj-1.iam.gserviceaccount.com",
            "token_uri": token_uri,
        }
    )


def _requests(wire_requests: list[WireRequest]) -> list[Request]:
    return [Request(r.method, r.url, list(r.headers), r.body) for r in wire_requests]


@dataclass(frozen=True)
class Row:
    type_: str
    config: dict[str, Any]
    receiver: str
    """Which receiver's CPU to read: ``Receivers.pids``' name, or ``server`` (the
    server's own: its column only)."""
    encoder: Callable[[list[Any], dict[str, Any]], list[WireRequest]] | None = None
    """For a receiver that cannot show what it took: the destination's own encoder,
    building the raw floor's requests (for S3, its object's body); None: the requests
    the receiver took."""
    processors: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def rows(receivers: Receivers) -> dict[str, Row]:
    http = receivers.http
    key = {"credentials_json": credentials_json(f"{http}/token")}
    gcp = {**key, "project_id": "proj-1"}
    resource = {
        "resource_type": "global",
        "resource_labels": [{"label_name": "project_id", "label_value": "proj-1"}],
    }
    s3 = receivers.s3
    return {
        "blackhole (no-processor floor)": Row("blackhole", {}, "server"),
        "five processors -> blackhole": Row("blackhole", {}, "server", processors=FIVE),
        "s3 (moto)": Row(
            "s3",
            {
                "auth": {"access_key_id": "bench", "secret_access_key": "bench"},
                "region": "us-east-1",
                "bucket": "bench",
                "encoding": "ndjson",
            },
            "moto",
            lambda events, config: s3_requests(
                events,
                S3DestinationConfig.model_validate(config),
                received_ms=now_ms(),
                endpoint=s3,
            ),
        ),
        "azure-blob-storage (Azurite)": Row(
            "azure-blob-storage",
            {
                "connection_string": azurite_connection_string(receivers.azure),
                "container_name": "logs",
                "encoding": "ndjson",
            },
            "azurite",
            lambda events, config: azure_blob_requests(
                events, AzureBlobStorageConfig.model_validate(config), received_ms=now_ms()
            ),
        ),
        "prometheus-remote-write (Prometheus)": Row(
            "prometheus-remote-write",
            {"endpoint": f"{receivers.prometheus}/api/v1/write", "auth": {"strategy": "none"}},
            "prometheus",
            lambda events, config: remote_write_requests(
                events, PrometheusRemoteWriteConfig.model_validate(config), received_ms=now_ms()
            ),
        ),
        "http ndjson": Row("http", {"uri": f"{http}/http", "encoding": "ndjson"}, "http"),
        "datadog-logs gzip": Row(
            "datadog-logs", {"api_key": "k", "site": "us1", "compression": "gzip"}, "http"
        ),
        "datadog-metrics": Row("datadog-metrics", {"api_key": "k", "site": "us1"}, "http"),
        "new-relic logs": Row(
            "new-relic", {"api": "logs", "account_id": "1", "license_key": "k"}, "http"
        ),
        "honeycomb-logs": Row("honeycomb-logs", {"api_key": "k", "dataset": "bench"}, "http"),
        "loki": Row(
            "loki", {"endpoint": http, "labels": {"app": "{{ .app }}", "job": "bench"}}, "http"
        ),
        "elasticsearch": Row(
            "elasticsearch", {"endpoints": [http], "index": "logs-{{ .app }}-%Y.%m.%d"}, "http"
        ),
        "splunk-hec-logs": Row("splunk-hec-logs", {"endpoint": http, "token": "t"}, "http"),
        "gcp-cloud-storage": Row(
            "gcp-cloud-storage", {**key, "bucket": "logs", "encoding": "text"}, "http"
        ),
        "gcp-cloud-operations": Row(
            "gcp-cloud-operations", {**gcp, **resource, "log_id": "app"}, "http"
        ),
        "gcp-cloud-pubsub": Row(
            "gcp-cloud-pubsub", {**gcp, "topic": "events", "encoding": "json"}, "http"
        ),
        "gcp-cloud-monitoring": Row("gcp-cloud-monitoring", {**gcp, **resource}, "http"),
        "mezmo (own store)": Row("mezmo", {}, "server"),
    }


@dataclass
class Measured:
    rate: list[float] = field(default_factory=list)
    server: list[float] = field(default_factory=list)
    receiver: list[float] = field(default_factory=list)
    client: list[float] = field(default_factory=list)

    def add(self, events: int, done: Replayed, server: float, receiver: float) -> None:
        total = done.units * events
        self.rate.append(total / done.seconds)
        for into, cpu in (
            (self.server, server),
            (self.receiver, receiver),
            (self.client, done.cpu),
        ):
            into.append(cpu * 1e6 / total)  # ms per 1,000 events

    def line(self, name: str, blackhole: float, raw: float | None) -> str:
        rate = statistics.median(self.rate)
        versus = f"{rate / raw:6.2f}x" if raw else "      "
        cpu = "  ".join(
            f"{statistics.median(values):7.1f}" if any(values) else f"{'-':>7s}"
            for values in (self.server, self.receiver, self.client)
        )
        return f"  {name:38s} {rate:8,.0f} {rate / blackhole:6.2f}x {versus} {cpu}"


def measure(
    load: Callable[[float], Replayed], seconds: float, pids: tuple[list[int], list[int]]
) -> tuple[Replayed, float, float]:
    """Run ``load``; the CPU seconds the server's and the receiver's processes spent."""
    server, receiver = pids
    before = cpu_seconds(*server), cpu_seconds(*receiver)
    done = load(seconds)
    return done, cpu_seconds(*server) - before[0], cpu_seconds(*receiver) - before[1]


def main() -> int:
    args = load_arguments(__doc__, 3)
    work = Path(tempfile.mkdtemp(prefix="tidegate-bench-receivers-"))
    receivers = start_receivers(work)
    env = {
        **server_env(f"sqlite+aiosqlite:///{work / 'bench.sqlite3'}", work),
        "TIDEGATE_DESTINATION_ALLOW": "127.0.0.1/32",
        "TIDEGATE_DESTINATION_ENDPOINTS": ",".join(f"{t}={receivers.http}" for t in VENDOR_TYPES),
        "TIDEGATE_S3_ENDPOINT": receivers.s3,
    }
    env.pop("TIDEGATE_REDIS_URL", None)
    events = metric_events(args.events, start_ms=now_ms() - 60_000)
    body = orjson.dumps(events)
    server: Server | None = None
    try:
        token = cli_enterprise_token(env)
        server = Server(env, "--log-level", "warning", output=None, timeout=120)
        enterprise = {"Authorization": f"Token {token}"}
        account = new_account(server.base, enterprise)
        headers = {**enterprise, "x-delegate-account-id": account}
        pipelines: dict[str, Callable[[float], Replayed]] = {}
        floors: dict[str, Callable[[float], Replayed]] = {}
        table = {
            name: row
            for name, row in rows(receivers).items()
            if row.type_ == "blackhole" or not args.only or any(part in name for part in args.only)
        }
        with httpx.Client(base_url=server.base, timeout=60) as http:
            api_data(
                http.put(
                    f"/v3/enterprise/account/{account}/features/throttle-processor",
                    headers=enterprise,
                )
            )
            for name, row in table.items():
                pipeline, route, key = wire(
                    http, headers, name, row.processors, (row.type_, row.config)
                )
                if row.processors:
                    check(http, headers, pipeline, len(row.processors))
                gateway = [
                    post_json(
                        f"{server.base}/gateway/{route}", body, {"Authorization": f"Token {key}"}
                    )
                ]
                replay(gateway, 1)  # warm-up (and the Google token)
                before = received(receivers.http)
                one = http.post(gateway[0].url, content=body, headers=dict(gateway[0].headers))
                api_json(one)
                pipelines[name] = partial(replay, gateway)
                if row.type_ == "s3" and row.encoder is not None:
                    [put] = row.encoder(events, row.config)
                    floors[name] = partial(put_objects, receivers.s3, "bench", put.body)
                elif row.encoder is not None:
                    floors[name] = partial(replay, _requests(row.encoder(events, row.config)))
                elif row.receiver == "http":
                    floors[name] = partial(replay, captured(receivers.http, before))
            lines = orjson.dumps(
                {"lines": [{"line": orjson.dumps(e).decode(), "app": "checkout"} for e in events]}
            )
            ingest = post_json(
                f"{server.base}/logs/ingest?hostname=bench",
                lines,
                {"apikey": ingestion_key(server.base, headers)},
            )
            floors["mezmo (own store)"] = partial(replay, [ingest])
        server_pids = process_tree(server.pid)
        results: dict[str, Measured] = {name: Measured() for name in table}
        raws: dict[str, Measured] = {name: Measured() for name in floors}
        for _ in range(args.rounds):
            for name, row in table.items():
                receiver = [receivers.pids[row.receiver]] if row.receiver in receivers.pids else []
                pids = (server_pids, receiver)
                results[name].add(args.events, *measure(pipelines[name], args.seconds, pids))
                if name in floors:
                    raws[name].add(args.events, *measure(floors[name], args.seconds, pids))
        blackhole = statistics.median(results["blackhole (no-processor floor)"].rate)
        print(
            f"{args.events} events per request, 16 connections, {args.seconds:g} s x "
            f"{args.rounds} interleaved rounds (median); CPU in ms per 1,000 events"
        )
        print(
            f"  {'pipeline / raw floor':38s} {'events/s':>8s} {'/black':>7s} {'/raw':>7s} "
            f"{'server':>7s}  {'receiv':>7s}  {'client':>7s}"
        )
        for name in table:
            raw = statistics.median(raws[name].rate) if name in raws else None
            print(results[name].line(name, blackhole, raw))
            if name in raws:
                print(raws[name].line("  raw floor", blackhole, None))
        print("  kafka: not measured (no broker runs here)")
    finally:
        if server is not None:
            server.stop()
        receivers.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

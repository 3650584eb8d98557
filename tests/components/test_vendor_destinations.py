"""The ``datadog-logs``, ``new-relic`` and ``honeycomb-logs`` destinations in published
pipelines, each delivering to a protocol-exact receiver of its vendor's documented API
(``tests/components/vendor_apis.py``: path, credential header, content type, gzip,
batch shape and limits, the API's answers), which the operator pointed the types at
(``TIDEGATE_DESTINATION_ENDPOINTS``). What arrives is compared byte for byte (after
gzip); the API's transient failures are retried with backoff, its refusals reported
(the gateway asks the sender to retry)."""

from __future__ import annotations

import gzip
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import orjson
import pytest
from tests.components.factories import wire_source
from tests.components.receiver import Receiver, Request
from tests.components.vendor_apis import (
    Api,
    datadog,
    honeycomb,
    new_relic_logs,
    new_relic_metrics,
)
from tests.conftest import AppClient, make_settings, running_client
from tests.gateway.factories import new_account

from tidegate.components.destinations.datadog_logs import (
    SITES,
    DatadogLogsConfig,
    datadog_requests,
)
from tidegate.components.validation import validate_user_config
from tidegate.errors import ValidationFailed
from tidegate.runtime.runtime import endpoints_from_setting

DD_KEY = "dd-api-key-0123"
HC_KEY = "hc-team-key"
NR_KEY = "nr-license-key"
EVENTS = [
    {"message": "one ✓", "app": "api", "timestamp": 1_735_787_045_678},
    {"line": "two", "app": "db", "nested": {"n": 2}},
    {"app": "no text"},
]


@dataclass
class Vendors:
    client: AppClient
    datadog: Api
    honeycomb: Api
    new_relic_logs: Api
    new_relic_metrics: Api
    receivers: dict[str, Receiver]


@pytest.fixture(scope="module")
async def vendors(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Vendors]:
    dd, hc = datadog(DD_KEY), honeycomb(HC_KEY, "dataset%20name")
    nr_logs, nr_metrics = new_relic_logs(NR_KEY), new_relic_metrics(NR_KEY)

    def new_relic(request: Request) -> tuple[int, bytes]:
        api = nr_logs if request.target.startswith("/log/") else nr_metrics
        return api.respond(request)

    async with (
        Receiver(respond=dd.respond) as dd_receiver,
        Receiver(respond=hc.respond) as hc_receiver,
        Receiver(respond=new_relic) as nr_receiver,
    ):
        endpoints = (
            f"datadog-logs={dd_receiver.base},honeycomb-logs={hc_receiver.base},"
            f"new-relic={nr_receiver.base}"
        )
        settings = make_settings(
            database_url,
            tmp_path_factory.mktemp("data"),
            destination_allow="127.0.0.1/32",
            destination_endpoints=endpoints,
        )
        async with running_client(settings) as http:
            yield Vendors(
                http,
                dd,
                hc,
                nr_logs,
                nr_metrics,
                {"datadog": dd_receiver, "honeycomb": hc_receiver, "new-relic": nr_receiver},
            )


async def _send(
    vendors: Vendors, type_: str, config: dict[str, Any], events: list[Any]
) -> tuple[int, str]:
    account = await new_account(vendors.client, throttle=False)
    wired = await wire_source(
        vendors.client, account, "http", {}, [("out", "destination", type_, config, ["source"])]
    )
    sent = await vendors.client.post(wired.url, json=events, headers=wired.auth)
    return sent.status_code, sent.text


def _dd(**fields: Any) -> dict[str, Any]:
    # destinations/datadog_logs.go: DatadogLogsFromModel sends all four.
    return {"api_key": DD_KEY, "site": "us1", "compression": "gzip", "ack_enabled": True, **fields}


@pytest.mark.parametrize("compression", ["gzip", "none"])
async def test_datadog_logs_arrive_byte_for_byte(vendors: Vendors, compression: str) -> None:
    receiver = vendors.receivers["datadog"]
    before = len(receiver.requests)
    status, text = await _send(vendors, "datadog-logs", _dd(compression=compression), EVENTS)
    assert status == 200, text
    [request] = receiver.requests[before:]
    assert request.target == "/api/v2/logs"
    assert request.header("DD-API-KEY") == DD_KEY
    assert request.header("Content-Type") == "application/json"
    body = request.body
    if compression == "gzip":
        assert request.header("Content-Encoding") == "gzip"
        body = gzip.decompress(body)
    else:
        assert request.header("Content-Encoding") is None
    assert body == (
        b'[{"message":"one \xe2\x9c\x93","app":"api","timestamp":1735787045678},'
        b'{"line":"two","app":"db","nested":{"n":2}},{"app":"no text"}]'
    )


async def test_datadog_batches_keep_to_the_api_limits(vendors: Vendors) -> None:
    """1,500 logs: two requests of at most 1,000 (the API's limit), all taken."""
    before = len(vendors.datadog.accepted)
    events = [{"message": f"line {n}"} for n in range(1_500)]
    status, text = await _send(vendors, "datadog-logs", _dd(), events)
    assert status == 200, text
    batches = vendors.datadog.accepted[before:]
    assert sorted(len(batch) for batch in batches) == [500, 1_000]
    sent = sorted(item["message"] for batch in batches for item in batch)
    assert sent == sorted(f"line {n}" for n in range(1_500))


async def test_datadog_transient_failures_are_retried(vendors: Vendors) -> None:
    receiver = vendors.receivers["datadog"]
    before = len(receiver.requests)
    vendors.datadog.faults[:] = [503, 429]
    status, text = await _send(vendors, "datadog-logs", _dd(), EVENTS[:1])
    assert status == 200, text
    assert len(receiver.requests[before:]) == 3


async def test_a_refused_key_is_reported_not_retried(vendors: Vendors) -> None:
    receiver = vendors.receivers["datadog"]
    before = len(receiver.requests)
    status, text = await _send(vendors, "datadog-logs", _dd(api_key="wrong"), EVENTS[:1])
    assert status == 503, text
    assert len(receiver.requests[before:]) == 1  # a 403 is final


async def test_honeycomb_events_arrive_byte_for_byte(vendors: Vendors) -> None:
    receiver = vendors.receivers["honeycomb"]
    before = len(receiver.requests)
    config = {"ack_enabled": True, "api_key": HC_KEY, "dataset": "dataset name"}
    status, text = await _send(vendors, "honeycomb-logs", config, EVENTS)
    assert status == 200, text
    [request] = receiver.requests[before:]
    assert request.target == "/1/batch/dataset%20name"
    assert request.header("X-Honeycomb-Team") == HC_KEY
    assert request.header("Content-Encoding") == "gzip"
    assert gzip.decompress(request.body) == (
        b'[{"data":{"message":"one \xe2\x9c\x93","app":"api","timestamp":1735787045678},'
        b'"time":"2025-01-02T03:04:05.678Z"},'
        b'{"data":{"line":"two","app":"db","nested":{"n":2}}},{"data":{"app":"no text"}}]'
    )


async def test_honeycomb_per_event_throttling_is_retried(vendors: Vendors) -> None:
    """The Batch API answers 200 with a status per event: a 429 among them is a
    failure of the batch, retried."""
    receiver = vendors.receivers["honeycomb"]
    answers = [[{"status": 202}, {"status": 429}]]
    ok = vendors.honeycomb.ok

    def throttled_once(document: Any) -> tuple[int, Any]:
        return (200, answers.pop()) if answers else ok(document)

    vendors.honeycomb.ok = throttled_once
    try:
        before = len(receiver.requests)
        config = {"ack_enabled": True, "api_key": HC_KEY, "dataset": "dataset name"}
        status, text = await _send(vendors, "honeycomb-logs", config, EVENTS[:2])
        assert status == 200, text
        assert len(receiver.requests[before:]) == 2
    finally:
        vendors.honeycomb.ok = ok


async def test_new_relic_logs_arrive_byte_for_byte(vendors: Vendors) -> None:
    receiver = vendors.receivers["new-relic"]
    before = len(receiver.requests)
    # destinations/new_relic.go: NewRelicDestinationFromModel sends all four.
    config = {"ack_enabled": True, "api": "logs", "account_id": "acc1", "license_key": NR_KEY}
    status, text = await _send(vendors, "new-relic", config, EVENTS)
    assert status == 200, text
    [request] = receiver.requests[before:]
    assert request.target == "/log/v1"
    assert request.header("X-License-Key") == NR_KEY
    assert request.header("Content-Encoding") == "gzip"
    assert gzip.decompress(request.body) == (
        b'[{"logs":[{"message":"one \xe2\x9c\x93","timestamp":1735787045678,'
        b'"attributes":{"app":"api"}},'
        b'{"message":"two","attributes":{"app":"db","nested":{"n":2}}},'
        b'{"message":"{\\"app\\":\\"no text\\"}","attributes":{"app":"no text"}}]}]'
    )


async def test_new_relic_metrics_from_metric_events(vendors: Vendors) -> None:
    receiver = vendors.receivers["new-relic"]
    before = len(receiver.requests)
    config = {"ack_enabled": True, "api": "metrics", "account_id": "acc2", "license_key": NR_KEY}
    events = [
        {
            "name": "orders",
            "namespace": "shop",
            "kind": "incremental",
            "value": {"type": "counter", "value": 3},
            "tags": {"region": "eu"},
            "timestamp": 1_735_787_045_678,
            "interval_ms": 60_000,
        },
        {
            "name": "temperature",
            "kind": "absolute",
            "value": {"type": "gauge", "value": 21.5},
            "timestamp": 1_735_787_045_000,
        },
        {"message": "not a metric: skipped"},
    ]
    status, text = await _send(vendors, "new-relic", config, events)
    assert status == 200, text
    [request] = receiver.requests[before:]
    assert request.target == "/metric/v1"
    assert request.header("Api-Key") == NR_KEY
    assert orjson.loads(gzip.decompress(request.body)) == [
        {
            "metrics": [
                {
                    "name": "shop.orders",
                    "timestamp": 1_735_787_045_678,
                    "attributes": {"region": "eu"},
                    "type": "count",
                    "value": 3,
                    "interval.ms": 60_000,
                },
                {
                    "name": "temperature",
                    "timestamp": 1_735_787_045_000,
                    "type": "gauge",
                    "value": 21.5,
                },
            ]
        }
    ]


def test_the_sites_are_datadogs_intake_hosts() -> None:
    config = DatadogLogsConfig.model_validate(_dd(site="eu1"))
    assert SITES["eu1"] == "datadoghq.eu"
    [request] = datadog_requests(
        [{"message": "x"}], config, base="https://http-intake.logs.datadoghq.eu"
    )
    assert request.url == "https://http-intake.logs.datadoghq.eu/api/v2/logs"


def test_the_endpoints_setting_is_checked_at_start(tmp_path: Any) -> None:
    for wrong in ("datadog-logs", "datadog-logs=ftp://x", "datadog-logs=https://x/path"):
        with pytest.raises(ValueError, match="destination_endpoints"):
            make_settings("sqlite+aiosqlite://", tmp_path, destination_endpoints=wrong)
    good = "datadog-logs=https://dd.proxy:8443,new-relic=https://log-api.eu.newrelic.com"
    settings = make_settings("sqlite+aiosqlite://", tmp_path, destination_endpoints=good)
    assert endpoints_from_setting(settings.destination_endpoints) == {
        "datadog-logs": "https://dd.proxy:8443",
        "new-relic": "https://log-api.eu.newrelic.com",
    }


def test_a_honeycomb_dataset_with_a_slash_is_refused_on_save() -> None:
    """Honeycomb's dataset names "may contain URL-encoded spaces or other special
    characters, but not URL-encoded slashes": the path tidegate would build for one
    (``/1/batch/a%2Fb``) is one the API refuses (``vendor_apis.honeycomb``), so such a
    dataset is a 400 on save rather than a delivery failing forever."""
    api = honeycomb(HC_KEY, "logs%2Fprod")
    slashed = Request(
        "POST", "/1/batch/logs%2Fprod", [("Content-Type", "application/json"),
        ("X-Honeycomb-Team", HC_KEY)], b'[{"data":{}}]',
    )  # fmt: skip
    assert api.respond(slashed)[0] == 400
    config = {"ack_enabled": True, "api_key": HC_KEY, "dataset": "logs/prod"}
    with pytest.raises(ValidationFailed) as caught:
        validate_user_config(kind="destination", type_="honeycomb-logs", user_config=config)
    assert caught.value.errors[0].instance_path == "/user_config/dataset"
    assert "slash" in caught.value.errors[0].message

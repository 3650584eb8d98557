"""Issue 9: the destinations inside running pipelines (events POSTed to a gateway route
reach a real receiver in the destination's wire format; a failing receiver makes the
gateway ask for a retry; ``ack_enabled: false`` answers without waiting), and the lines
of /logs/ingest flowing into a log-analysis-ingestion pipeline.

The receivers listen on 127.0.0.1, which tidegate refuses by default: this module's
``client`` is an app whose operator allow-listed loopback."""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest
from tests.components.factories import wire_source
from tests.components.receiver import Receiver
from tests.conftest import AppClient
from tests.gateway.factories import new_account
from tests.ingest.factories import make_ingestor
from tests.waiting import eventually

from tidegate.components.destinations.elasticsearch import FILTER_PATH
from tidegate.components.destinations.splunk_hec_logs import SplunkHecLogsConfig


@pytest.fixture(scope="module")
def client(loopback_client: AppClient) -> AppClient:
    return loopback_client


def _to(
    type_: str, config: dict[str, Any]
) -> list[tuple[str, str, str, dict[str, Any], list[str]]]:
    return [("out", "destination", type_, config, ["source"])]


EVENTS = [
    {"message": "one", "app": "api", "host": "web-1", "timestamp": 1_735_787_045_678},
    {"message": "two", "app": "db", "host": "web-2", "timestamp": 1_735_787_046_000},
]


async def test_loki_destination_in_a_pipeline(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    async with Receiver(script=[204]) as receiver:
        wired = await wire_source(
            client,
            account,
            "http",
            {},
            _to("loki", {"endpoint": receiver.base, "labels": {"app": "{{ .app }}"}}),
        )
        response = await client.post(wired.url, json=EVENTS, headers=wired.auth)
        assert response.status_code == 200, response.text
    (request,) = receiver.requests
    assert (request.method, request.target) == ("POST", "/loki/api/v1/push")
    assert request.body == (
        b'{"streams":[{"stream":{"app":"api"},"values":[["1735787045678000000",'
        b'"{\\"message\\":\\"one\\",\\"app\\":\\"api\\",\\"host\\":\\"web-1\\",'
        b'\\"timestamp\\":1735787045678}"]]},{"stream":{"app":"db"},"values":'
        b'[["1735787046000000000","{\\"message\\":\\"two\\",\\"app\\":\\"db\\",'
        b'\\"host\\":\\"web-2\\",\\"timestamp\\":1735787046000}"]]}]}'
    )


async def test_elasticsearch_and_splunk_destinations_in_one_pipeline(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    async with (
        Receiver(answer=b'{"errors":false}') as elastic,
        Receiver(answer=b'{"text":"Success","code":0}') as splunk,
    ):
        wired = await wire_source(
            client,
            account,
            "http",
            {},
            [
                (
                    "es",
                    "destination",
                    "elasticsearch",
                    {"endpoints": [elastic.base], "index": "logs"},
                    ["source"],
                ),
                (
                    "hec",
                    "destination",
                    "splunk-hec-logs",
                    {"endpoint": splunk.base, "token": "tok"},
                    ["source"],
                ),
            ],
        )
        response = await client.post(wired.url, json=EVENTS[:1], headers=wired.auth)
        assert response.status_code == 200, response.text
    assert elastic.requests[0].target == f"/_bulk?{FILTER_PATH}"
    assert elastic.requests[0].body == (
        b'{"index":{"_index":"logs"}}\n'
        b'{"message":"one","app":"api","host":"web-1","timestamp":1735787045678}\n'
    )
    assert splunk.requests[0].target == "/services/collector/event"
    assert splunk.requests[0].header("authorization") == "Splunk tok"
    assert splunk.requests[0].body == (
        b'{"time":1735787045.678,"host":"web-1","event":{"message":"one","app":"api"}}\n'
    )


async def test_http_destination_platform_fields_in_a_pipeline(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    async with Receiver() as receiver:
        wired = await wire_source(
            client,
            account,
            "http",
            {},
            _to(
                "http",
                {
                    "uri": receiver.base + "/in",
                    "method": "put",
                    "encoding": "ndjson",
                    "auth": {"strategy": "basic", "user": "u", "password": "p"},
                    "headers": [{"header_name": "X-A", "header_value": "1"}],
                    "timeout_secs": 5,
                },
            ),
        )
        response = await client.post(wired.url, json=EVENTS, headers=wired.auth)
        assert response.status_code == 200, response.text
    (request,) = receiver.requests
    assert (request.method, request.target) == ("PUT", "/in")
    assert request.header("authorization") == "Basic " + base64.b64encode(b"u:p").decode()
    assert request.header("x-a") == "1"
    assert [orjson.loads(line) for line in request.body.splitlines()] == EVENTS


async def test_a_failing_destination_asks_the_sender_to_retry(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    async with Receiver(script=[400]) as receiver:
        wired = await wire_source(
            client,
            account,
            "http",
            {},
            _to("loki", {"endpoint": receiver.base, "labels": {"job": "x"}}),
        )
        response = await client.post(wired.url, json=EVENTS, headers=wired.auth)
    assert response.status_code == 503
    assert response.headers["retry-after"]


async def test_ack_disabled_answers_without_waiting_for_the_destination(
    client: AppClient,
) -> None:
    account = await new_account(client, throttle=False)
    async with Receiver(script=[500]) as receiver:
        wired = await wire_source(
            client,
            account,
            "http",
            {},
            _to("http", {"uri": receiver.base + "/x", "ack_enabled": False}),
        )
        response = await client.post(wired.url, json=EVENTS, headers=wired.auth)
        assert response.status_code == 200, response.text
        await eventually(  # delivered (and retried) in the background
            lambda: len(receiver.requests) >= 2,
            what=lambda: f"a delivery and its retry, got {len(receiver.requests)} requests",
        )


async def test_blackhole_takes_ack_enabled(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire_source(client, account, "http", {}, _to("blackhole", {"ack_enabled": True}))
    response = await client.post(wired.url, json=EVENTS, headers=wired.auth)
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("source_type", ["log-analysis-ingestion", "log-analysis"])
async def test_lines_ingested_flow_into_log_analysis_ingestion_pipelines(
    client: AppClient, source_type: str
) -> None:
    ingestor = await make_ingestor(client)
    async with Receiver() as receiver:
        await wire_source(
            client,
            ingestor.account,
            source_type,
            {},
            [
                ("keep", "processor", "filter", _ERRORS, ["source"]),
                ("out", "destination", "http", {"uri": receiver.base + "/x"}, ["keep"]),
            ],
            routed=False,
        )
        response = await client.post(
            "/logs/ingest",
            params={"hostname": "h", "tags": "t1"},
            json={
                "lines": [
                    {
                        "line": "boom",
                        "level": "error",
                        "app": "api",
                        "timestamp": 1_700_000_000_000,
                    },
                    {"line": "fine", "level": "info"},
                ]
            },
            headers=ingestor.headers,
        )
        assert response.status_code == 200, response.text
        await eventually(  # after the answer, in the background
            lambda: receiver.requests, what="the matching line delivered"
        )
    (request,) = receiver.requests
    assert orjson.loads(request.body) == [
        {
            "line": "boom",
            "timestamp": 1_700_000_000_000,
            "host": "h",
            "app": "api",
            "level": "error",
            "tags": ["t1"],
        }
    ]


_ERRORS = {
    "action": "allow",
    "conditional": {
        "expressions": [{"field": ".level", "str_operator": "equal", "value": "error"}]
    },
}


async def test_destinations_in_the_terraform_providers_shape(client: AppClient) -> None:
    """Loki's ``encoding{codec}`` and list of labels, Splunk's ``url`` and
    ``{value_type, value}`` fields, Elasticsearch's empty AWS auth fields: as
    ``tests/pipelines/provider_bodies.py`` sends them, delivered as the flat forms are."""
    account = await new_account(client, throttle=False)
    async with (
        Receiver(script=[204]) as loki,
        Receiver(answer=b'{"text":"Success","code":0}') as splunk,
        Receiver(answer=b'{"errors":false}') as elastic,
    ):
        empty_aws = {"access_key_id": "", "secret_access_key": "", "region": ""}
        wired = await wire_source(
            client,
            account,
            "http",
            {},
            [
                (
                    "loki",
                    "destination",
                    "loki",
                    {
                        "endpoint": loki.base,
                        "path": "/loki/api/v1/push",
                        "ack_enabled": True,
                        "encoding": {"codec": "text"},
                        "labels": [{"label_name": "app", "label_value": "{{ .app }}"}],
                    },
                    ["source"],
                ),
                (
                    "hec",
                    "destination",
                    "splunk-hec-logs",
                    {
                        "ack_enabled": True,
                        "compression": "none",
                        "url": splunk.base,
                        "token": "tok",
                        "tls_verify_certificate": True,
                        "host_field": "host",
                        "timestamp_field": "timestamp",
                        "source": {"value_type": "none"},
                        "sourcetype": {"value_type": "field", "value": ".app"},
                        "index": {"value_type": "value", "value": "main"},
                    },
                    ["source"],
                ),
                (
                    "es",
                    "destination",
                    "elasticsearch",
                    {
                        "endpoints": [elastic.base],
                        "index": "logs",
                        "ack_enabled": True,
                        "compression": "none",
                        "auth": {"strategy": "basic", "user": "u", "password": "p", **empty_aws},
                    },
                    ["source"],
                ),
            ],
        )
        response = await client.post(wired.url, json=EVENTS[:1], headers=wired.auth)
        assert response.status_code == 200, response.text
    assert loki.requests[0].body == (
        b'{"streams":[{"stream":{"app":"api"},"values":[["1735787045678000000","one"]]}]}'
    )
    assert splunk.requests[0].target == "/services/collector/event"
    assert splunk.requests[0].body == (
        b'{"time":1735787045.678,"host":"web-1","sourcetype":"api","index":"main",'
        b'"event":{"message":"one","app":"api"}}\n'
    )
    assert (
        elastic.requests[0].header("authorization") == "Basic " + base64.b64encode(b"u:p").decode()
    )


async def test_splunk_refuses_an_unverified_certificate(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    pipeline = await client.post("/v3/pipeline", json={"title": "p"}, headers=account.headers)
    response = await client.post(
        f"/v3/pipeline/{pipeline.json()['data']['id']}/sink",
        json={
            "type": "splunk-hec-logs",
            "user_config": {
                "url": "https://s.example.com",
                "token": "t",
                "tls_verify_certificate": False,
            },
        },
        headers=account.headers,
    )
    assert response.status_code == 400, response.text
    assert "tidegate always verifies certificates" in response.text


async def test_http_destination_advanced_options_of_the_terraform_provider(
    client: AppClient,
) -> None:
    """The provider sends method, payload_prefix/suffix, max_bytes and timeout_secs
    inside ``advanced_options`` (destinations/http.go); they are applied."""
    account = await new_account(client, throttle=False)
    async with Receiver() as receiver:
        config = {
            "uri": receiver.base + "/in",
            "encoding": "json",
            "compression": "none",
            "ack_enabled": True,
            "auth": {"strategy": "none"},
            "advanced_options": {
                "method": "put",
                "payload_prefix": '{"data":',
                "payload_suffix": "}",
                "max_bytes": 4096,
                "timeout_secs": 5,
                "proxy": {"enabled": False},
            },
        }
        wired = await wire_source(client, account, "http", {}, _to("http", config))
        response = await client.post(wired.url, json=EVENTS, headers=wired.auth)
        assert response.status_code == 200, response.text
    (request,) = receiver.requests
    assert (request.method, request.target) == ("PUT", "/in")
    assert orjson.loads(request.body) == {"data": EVENTS}


@pytest.mark.parametrize(
    "advanced",
    [
        {"tls_protocols": ["h2"]},
        {"rate_limiting": {"request_limit": 5}},
        {"proxy": {"enabled": True}},
    ],
)
async def test_http_destination_advanced_options_not_built_are_refused(
    client: AppClient, advanced: dict[str, Any]
) -> None:
    account = await new_account(client, throttle=False)
    pipeline = await client.post("/v3/pipeline", json={"title": "p"}, headers=account.headers)
    config = {"uri": "https://h.example.com/in", "advanced_options": advanced}
    response = await client.post(
        f"/v3/pipeline/{pipeline.json()['data']['id']}/sink",
        json={"type": "http", "user_config": config},
        headers=account.headers,
    )
    assert response.status_code == 400, response.text
    assert f"advanced_options.{next(iter(advanced))}" in response.text
    assert "not supported" in response.text


def test_splunk_value_type_field_must_be_a_field_path() -> None:
    base = {"url": "https://s.example.com", "token": "t"}
    with pytest.raises(ValueError, match="may not hold"):
        SplunkHecLogsConfig.model_validate(
            {**base, "sourcetype": {"value_type": "field", "value": '."a}}{{ .b"'}}
        )
    with pytest.raises(ValueError, match="sourcetype"):
        SplunkHecLogsConfig.model_validate(
            {**base, "sourcetype": {"value_type": "field", "value": ".a["}}
        )
    config = SplunkHecLogsConfig.model_validate(
        {**base, "index": {"value_type": "field", "value": ".team"}}
    )
    assert config.index == "{{ .team }}"

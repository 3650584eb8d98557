"""Issue 9: the outbound destinations' wire formats, sent through the real sender (the
destination guard allowing loopback) to a real HTTP receiver, checked byte for byte:
method, path, headers, body."""

from __future__ import annotations

import asyncio
import base64
import gzip
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from pydantic import ValidationError
from tests.components.receiver import Receiver

from tidegate.components.destinations.elasticsearch import (
    ElasticsearchConfig,
    bulk_accepted,
    bulk_unsettled,
    elasticsearch_requests,
)
from tidegate.components.destinations.http import HttpDestinationConfig, http_requests
from tidegate.components.destinations.http_sender import OutboundSender, Unsettled
from tidegate.components.destinations.loki import LokiConfig, loki_requests
from tidegate.components.destinations.splunk_hec_logs import (
    SplunkHecLogsConfig,
    splunk_hec_requests,
)
from tidegate.components.destinations.wire import WireRequest
from tidegate.delivery import DeliveryFailed
from tidegate.kit.destination_guard import GuardedTransport, policy_from_setting

RECEIVED_MS = 1_700_000_000_000
EVENTS: list[dict[str, Any]] = [
    {"message": "first", "host": "web-1", "app": "api", "timestamp": 1_735_787_045_678},
    {"message": "second", "host": "web-2", "app": "api", "timestamp": "2025-01-02 03:04:06"},
    {"message": "third", "app": "db"},
]


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    transport = GuardedTransport(
        policy_from_setting("127.0.0.1/32"), limits=httpx.Limits(max_connections=8)
    )
    async with httpx.AsyncClient(transport=transport, trust_env=False) as http:
        yield http


def _sender(client: httpx.AsyncClient, **kwargs: Any) -> OutboundSender:
    options: dict[str, Any] = {
        "concurrency": 2,
        "timeout_s": 5.0,
        "max_retries": 3,
        "backoff_base_ms": 10,
        "backoff_cap_ms": 50,
        **kwargs,
    }
    return OutboundSender(client=client, name="test", **options)


async def _send(client: httpx.AsyncClient, requests: list[WireRequest], **kwargs: Any) -> None:
    deadline = asyncio.get_running_loop().time() + 10
    await _sender(client, **kwargs).send_all(requests, deadline=deadline)


def _plain(headers: list[tuple[str, str]], *skip: str) -> list[tuple[str, str]]:
    """The request's headers minus what httpx adds (host, length, agent...)."""
    added = {"host", "content-length", "accept", "accept-encoding", "connection", "user-agent"}
    return [(k.lower(), v) for k, v in headers if k.lower() not in added | set(skip)]


# ---- http -------------------------------------------------------------------------


async def test_http_json_with_auth_headers_prefix_and_suffix(client: httpx.AsyncClient) -> None:
    async with Receiver() as receiver:
        config = HttpDestinationConfig.model_validate(
            {
                "uri": receiver.base + "/hook?x=1",
                "method": "put",
                "encoding": "json",
                "auth": {"strategy": "basic", "user": "u", "password": "p:w"},
                "headers": [{"header_name": "X-Team", "header_value": "core"}],
                "payload_prefix": '{"data":',
                "payload_suffix": "}",
            }
        )
        await _send(client, http_requests(EVENTS[:2], config))
    (request,) = receiver.requests
    assert (request.method, request.target) == ("PUT", "/hook?x=1")
    assert _plain(request.headers) == [
        ("content-type", "application/json"),
        ("authorization", "Basic " + base64.b64encode(b"u:p:w").decode()),
        ("x-team", "core"),
    ]
    assert request.body == (
        b'{"data":[{"message":"first","host":"web-1","app":"api","timestamp":1735787045678},'
        b'{"message":"second","host":"web-2","app":"api","timestamp":"2025-01-02 03:04:06"}]}'
    )


async def test_http_ndjson_gzip_bearer(client: httpx.AsyncClient) -> None:
    async with Receiver() as receiver:
        config = HttpDestinationConfig.model_validate(
            {
                "uri": receiver.base + "/in",
                "encoding": "ndjson",
                "compression": "gzip",
                "auth": {"strategy": "bearer", "token": "t0k"},
            }
        )
        await _send(client, http_requests([{"a": 1}, {"b": "x"}], config))
    (request,) = receiver.requests
    assert (request.method, request.target) == ("POST", "/in")
    assert _plain(request.headers) == [
        ("content-type", "application/x-ndjson"),
        ("authorization", "Bearer t0k"),
        ("content-encoding", "gzip"),
    ]
    assert gzip.decompress(request.body) == b'{"a":1}\n{"b":"x"}\n'


async def test_http_text_and_max_bytes_split(client: httpx.AsyncClient) -> None:
    events = [{"message": "m" * 600}, {"line": "l" * 600}, {"other": 1}]
    async with Receiver() as receiver:
        config = HttpDestinationConfig.model_validate(
            {"uri": receiver.base + "/t", "encoding": "text", "max_bytes": 1024}
        )
        await _send(client, http_requests(events, config))
    bodies = sorted(request.body for request in receiver.requests)
    assert bodies == sorted([b"m" * 600 + b"\n", b"l" * 600 + b"\n" + b'{"other":1}\n'])
    assert {request.header("content-type") for request in receiver.requests} == {
        "text/plain; charset=utf-8"
    }


def test_http_aliases_of_the_first_form_still_validate() -> None:
    config = HttpDestinationConfig.model_validate(
        {
            "uri": "http://x.test/",
            "headers": {"X-A": "1"},
            "batch": {"max_events": 2, "max_bytes": 2048},
            "timeout_ms": 1500,
            "max_retries": 1,
        }
    )
    assert [(h.header_name, h.header_value) for h in config.headers] == [("X-A", "1")]
    assert (config.batch_bytes, config.batch_events, config.timeout_s) == (2048, 2, 1.5)
    assert len(http_requests([{"n": n} for n in range(5)], config)) == 3


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"uri": "http://x.test", "method": "get"}, "method"),
        ({"uri": "http://x.test", "encoding": "xml"}, "encoding"),
        ({"uri": "http://x.test", "auth": {"strategy": "bearer"}}, "auth"),
        (
            {"uri": "http://x.test", "headers": [{"header_name": "Host", "header_value": "x"}]},
            "headers",
        ),
        ({"uri": "http://x.test", "compression": "br"}, "compression"),
        ({"uri": "http://x.test", "max_bytes": 10}, "max_bytes"),
        ({"uri": "http://x.test", "surprise": 1}, "surprise"),
    ],
)
def test_http_config_names_the_failing_field(config: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        HttpDestinationConfig.model_validate(config)
    assert caught.value.errors()[0]["loc"][0] == field


async def test_retries_after_503_then_delivers(client: httpx.AsyncClient) -> None:
    async with Receiver(script=[503, 200]) as receiver:
        config = HttpDestinationConfig.model_validate({"uri": receiver.base + "/r"})
        await _send(client, http_requests([{"a": 1}], config))
    assert len(receiver.requests) == 2
    assert receiver.requests[0].body == receiver.requests[1].body == b'[{"a":1}]'


async def test_a_400_fails_at_once(client: httpx.AsyncClient) -> None:
    async with Receiver(script=[400]) as receiver:
        config = HttpDestinationConfig.model_validate({"uri": receiver.base + "/r"})
        with pytest.raises(DeliveryFailed, match="HTTP 400"):
            await _send(client, http_requests([{"a": 1}], config))
    assert len(receiver.requests) == 1


async def test_a_private_address_is_refused_by_the_guard() -> None:
    transport = GuardedTransport(policy_from_setting(""), limits=httpx.Limits())
    async with httpx.AsyncClient(transport=transport) as guarded, Receiver() as receiver:
        config = HttpDestinationConfig.model_validate({"uri": receiver.base + "/r"})
        with pytest.raises(DeliveryFailed):
            await _send(guarded, http_requests([{"a": 1}], config))
    assert receiver.requests == []


# ---- loki -------------------------------------------------------------------------


async def test_loki_push_groups_streams_by_rendered_labels(client: httpx.AsyncClient) -> None:
    async with Receiver(script=[204]) as receiver:
        config = LokiConfig.model_validate(
            {
                "endpoint": receiver.base,
                "labels": {"app": "{{ .app }}", "job": "tidegate"},
                "encoding": "text",
                "auth": {"strategy": "basic", "user": "loki", "password": "pw"},
            }
        )
        await _send(client, loki_requests(EVENTS, config, received_ms=RECEIVED_MS))
    (request,) = receiver.requests
    assert (request.method, request.target) == ("POST", "/loki/api/v1/push")
    assert _plain(request.headers) == [
        ("content-type", "application/json"),
        ("authorization", "Basic " + base64.b64encode(b"loki:pw").decode()),
    ]
    assert request.body == (
        b'{"streams":['
        b'{"stream":{"app":"api","job":"tidegate"},"values":['
        b'["1735787045678000000","first"],["1735787046000000000","second"]]},'
        b'{"stream":{"app":"db","job":"tidegate"},"values":[["1700000000000000000","third"]]}'
        b"]}"
    )


def test_loki_json_lines_custom_path_tenant_and_no_label() -> None:
    config = LokiConfig.model_validate(
        {
            "endpoint": "http://loki.test:3100/",
            "path": "/api/prom/push",
            "labels": {"missing": "{{ .nope }}"},
            "tenant_id": "t1",
        }
    )
    (request,) = loki_requests([{"a": 1}], config, received_ms=5)
    assert request.url == "http://loki.test:3100/api/prom/push"
    assert ("X-Scope-OrgID", "t1") in request.headers
    assert request.body == (
        b'{"streams":[{"stream":{"agent":"tidegate"},"values":[["5000000","{\\"a\\":1}"]]}]}'
    )


def test_loki_refuses_a_bad_label_name() -> None:
    with pytest.raises(ValidationError) as caught:
        LokiConfig.model_validate({"endpoint": "http://l.test", "labels": {"bad-name": "x"}})
    assert caught.value.errors()[0]["loc"][0] == "labels"


# ---- elasticsearch ----------------------------------------------------------------


async def test_elasticsearch_bulk_ndjson(client: httpx.AsyncClient) -> None:
    async with Receiver(answer=b'{"took":3,"errors":false,"items":[]}') as receiver:
        config = ElasticsearchConfig.model_validate(
            {
                "endpoints": [receiver.base],
                "index": "logs-{{ .app }}-%Y.%m.%d",
                "pipeline": "geo ip",
                "auth": {"strategy": "basic", "user": "elastic", "password": "s"},
                "compression": "gzip",
            }
        )
        await _send(
            client,
            elasticsearch_requests(EVENTS, config, received_ms=RECEIVED_MS),
            accepted=bulk_accepted,
        )
    (request,) = receiver.requests
    assert (request.method, request.target) == (
        "POST",
        "/_bulk?filter_path=errors,items.*.error,items.*.status&pipeline=geo%20ip",
    )
    assert _plain(request.headers) == [
        ("content-type", "application/x-ndjson"),
        ("authorization", "Basic " + base64.b64encode(b"elastic:s").decode()),
        ("content-encoding", "gzip"),
    ]
    assert gzip.decompress(request.body) == (
        b'{"index":{"_index":"logs-api-2025.01.02"}}\n'
        b'{"message":"first","host":"web-1","app":"api","timestamp":1735787045678}\n'
        b'{"index":{"_index":"logs-api-2025.01.02"}}\n'
        b'{"message":"second","host":"web-2","app":"api","timestamp":"2025-01-02 03:04:06"}\n'
        b'{"index":{"_index":"logs-db-2023.11.14"}}\n'
        b'{"message":"third","app":"db"}\n'
    )


async def test_elasticsearch_errors_true_is_retried_then_fails(client: httpx.AsyncClient) -> None:
    async with Receiver(answer=b'{"took":1,"errors":true,"items":[]}') as receiver:
        config = ElasticsearchConfig.model_validate({"endpoints": receiver.base})
        with pytest.raises(DeliveryFailed, match="refusing"):
            await _send(
                client,
                elasticsearch_requests([{"a": 1}], config, received_ms=RECEIVED_MS),
                accepted=bulk_accepted,
                max_retries=1,
            )
    assert len(receiver.requests) == 2
    assert receiver.requests[0].body == b'{"index":{"_index":"tidegate-2023.11.14"}}\n{"a":1}\n'


def test_a_bulk_answer_not_readable_item_by_item_sends_the_request_again_whole() -> None:
    config = ElasticsearchConfig.model_validate(
        {"endpoints": "http://es.example", "compression": "gzip"}
    )
    (request,) = elasticsearch_requests([{"a": 1}, {"b": 2}], config, received_ms=RECEIVED_MS)
    assert bulk_unsettled(request, b'{"errors":false,"items":[]}') is None
    whole = Unsettled(request.body, retry_items=2)
    cut = b'{"errors":true,"items":[{"index":{"status":201}},{"index":{"sta'
    assert bulk_unsettled(request, cut) == whole  # cut at the bytes read
    one = b'{"errors":true,"items":[{"index":{"status":429}}]}'
    assert bulk_unsettled(request, one) == whole  # not one item per document
    both = b'{"errors":true,"items":[{"index":{"status":201}},{"index":{"status":503}}]}'
    left = bulk_unsettled(request, both)
    assert left is not None
    assert left.retry_body is not None
    assert (
        gzip.decompress(left.retry_body) == b'{"index":{"_index":"tidegate-2023.11.14"}}\n{"b":2}\n'
    )


# ---- splunk-hec-logs --------------------------------------------------------------


async def test_splunk_hec_event_endpoint(client: httpx.AsyncClient) -> None:
    async with Receiver(answer=b'{"text":"Success","code":0}') as receiver:
        config = SplunkHecLogsConfig.model_validate(
            {
                "endpoint": receiver.base,
                "token": "abc-123",
                "source": "tidegate",
                "source_type": "_json",
                "index": "{{ .app }}",
            }
        )
        await _send(client, splunk_hec_requests(EVENTS, config))
    (request,) = receiver.requests
    assert (request.method, request.target) == ("POST", "/services/collector/event")
    assert _plain(request.headers) == [
        ("authorization", "Splunk abc-123"),
        ("content-type", "application/json"),
    ]
    assert request.body == (
        b'{"time":1735787045.678,"host":"web-1","source":"tidegate","sourcetype":"_json",'
        b'"index":"api","event":{"message":"first","app":"api"}}\n'
        b'{"time":1735787046.0,"host":"web-2","source":"tidegate","sourcetype":"_json",'
        b'"index":"api","event":{"message":"second","app":"api"}}\n'
        b'{"source":"tidegate","sourcetype":"_json","index":"db",'
        b'"event":{"message":"third","app":"db"}}\n'
    )


def test_splunk_hec_custom_fields_and_gzip() -> None:
    config = SplunkHecLogsConfig.model_validate(
        {
            "endpoint": "https://splunk.test:8088",
            "token": "t",
            "host_field": "hostname",
            "timestamp_field": "ts",
            "compression": "gzip",
        }
    )
    # 1,700,000,000,500 ms; the one time rule also reads seconds (1700000000) as such.
    (request,) = splunk_hec_requests(
        [{"hostname": "h", "ts": 1_700_000_000_500, "host": "kept"}], config
    )
    assert ("Content-Encoding", "gzip") in request.headers
    assert gzip.decompress(request.body) == (
        b'{"time":1700000000.5,"host":"h","event":{"host":"kept"}}\n'
    )

"""The ``elasticsearch`` and ``loki`` destinations in published pipelines, each delivering
to a protocol-exact receiver of the service's documented API
(``tests/components/log_store_apis.py``: Elasticsearch's bulk API, Loki's push API),
which parses the request as the service does and refuses what it refuses. What arrives
is compared byte for byte (after gzip), and what the receiver stored is read back;
transient failures are retried, refusals reported (the gateway asks the sender to
retry)."""

from __future__ import annotations

import base64
import gzip
from typing import Any

from tests.components.factories import wire_source
from tests.components.log_store_apis import ElasticsearchBulk, LokiPush
from tests.components.receiver import Receiver
from tests.conftest import AppClient
from tests.gateway.factories import new_account

EVENTS = [
    {"message": "one ✓", "app": "api", "timestamp": 1_735_787_045_678},
    {"line": "two", "app": "db", "nested": {"n": 2}, "timestamp": "2025-01-02T03:04:06Z"},
    {"app": "api", "timestamp": 1_735_787_047_000},
]


async def _send(client: AppClient, type_: str, config: dict[str, Any], events: list[Any]) -> int:
    account = await new_account(client, throttle=False)
    wired = await wire_source(
        client, account, "http", {}, [("out", "destination", type_, config, ["source"])]
    )
    sent = await client.post(wired.url, json=events, headers=wired.auth)
    return sent.status_code


# ---- elasticsearch ----------------------------------------------------------------


async def test_elasticsearch_bulk_is_taken_by_the_bulk_api(loopback_client: AppClient) -> None:
    api = ElasticsearchBulk(user="elastic", password="s3cret")
    async with Receiver(respond=api.respond) as receiver:
        config = {
            "endpoints": [receiver.base],
            "index": "logs-{{ .app }}-%Y.%m.%d",
            "pipeline": "geo ip",
            "auth": {"strategy": "basic", "user": "elastic", "password": "s3cret"},
            "compression": "gzip",
        }
        assert await _send(loopback_client, "elasticsearch", config, EVENTS) == 200
    [request] = receiver.requests
    assert (request.method, request.target) == ("POST", "/_bulk?pipeline=geo%20ip")
    assert request.header("content-type") == "application/x-ndjson"
    assert request.header("content-encoding") == "gzip"
    assert gzip.decompress(request.body) == (
        b'{"index":{"_index":"logs-api-2025.01.02"}}\n'
        b'{"message":"one \xe2\x9c\x93","app":"api","timestamp":1735787045678}\n'
        b'{"index":{"_index":"logs-db-2025.01.02"}}\n'
        b'{"line":"two","app":"db","nested":{"n":2},"timestamp":"2025-01-02T03:04:06Z"}\n'
        b'{"index":{"_index":"logs-api-2025.01.02"}}\n'
        b'{"app":"api","timestamp":1735787047000}\n'
    )
    assert api.indices == {
        "logs-api-2025.01.02": [EVENTS[0], EVENTS[2]],
        "logs-db-2025.01.02": [EVENTS[1]],
    }
    assert api.pipelines == ["geo ip"]


async def test_elasticsearch_transient_refusals_are_retried(loopback_client: AppClient) -> None:
    api = ElasticsearchBulk(faults=[429, 503])
    async with Receiver(respond=api.respond) as receiver:
        config = {"endpoints": [receiver.base], "index": "plain"}
        assert await _send(loopback_client, "elasticsearch", config, EVENTS[:1]) == 200
    assert len(receiver.requests) == 3
    assert api.indices == {"plain": [EVENTS[0]]}


async def test_elasticsearch_documents_it_refuses_fail_the_delivery(
    loopback_client: AppClient,
) -> None:
    """An index name Elasticsearch refuses (a space, rendered from the event) is a 200
    with ``"errors": true`` and a 400 for that item: the delivery fails (after the
    retries), reported to the sender, and nothing else of the batch is lost."""
    api = ElasticsearchBulk()
    async with Receiver(respond=api.respond) as receiver:
        config = {"endpoints": [receiver.base], "index": "logs-{{ .app }}"}
        events = [{"message": "ok", "app": "api"}, {"message": "bad", "app": "two words"}]
        assert await _send(loopback_client, "elasticsearch", config, events) == 503
    assert len(receiver.requests) > 1  # retried: the bulk API's answer was read
    assert set(api.indices) == {"logs-api"}


# ---- loki -------------------------------------------------------------------------


async def test_loki_push_is_taken_by_the_push_api(loopback_client: AppClient) -> None:
    api = LokiPush(tenant="team-a", user="loki", password="pw")
    async with Receiver(respond=api.respond) as receiver:
        config = {
            "endpoint": receiver.base,
            "labels": [
                {"label_name": "app", "label_value": "{{ .app }}"},
                {"label_name": "job", "label_value": "tidegate"},
            ],
            "encoding": {"codec": "text"},
            "tenant_id": "team-a",
            "auth": {"strategy": "basic", "user": "loki", "password": "pw"},
        }
        assert await _send(loopback_client, "loki", config, EVENTS) == 200
    [request] = receiver.requests
    assert (request.method, request.target) == ("POST", "/loki/api/v1/push")
    assert request.header("content-type") == "application/json"
    assert request.header("x-scope-orgid") == "team-a"
    assert request.header("authorization") == "Basic " + base64.b64encode(b"loki:pw").decode()
    assert request.body == (
        b'{"streams":['
        b'{"stream":{"app":"api","job":"tidegate"},"values":['
        b'["1735787045678000000","one \xe2\x9c\x93"],'
        b'["1735787047000000000","{\\"app\\":\\"api\\",\\"timestamp\\":1735787047000}"]]},'
        b'{"stream":{"app":"db","job":"tidegate"},"values":[["1735787046000000000","two"]]}'
        b"]}"
    )
    assert api.streams == {
        (("app", "api"), ("job", "tidegate")): [
            (1_735_787_045_678_000_000, "one ✓"),
            (1_735_787_047_000_000_000, '{"app":"api","timestamp":1735787047000}'),
        ],
        (("app", "db"), ("job", "tidegate")): [(1_735_787_046_000_000_000, "two")],
    }


async def test_loki_gzip_json_lines_and_a_retried_5xx(loopback_client: AppClient) -> None:
    api = LokiPush(faults=[500])
    async with Receiver(respond=api.respond) as receiver:
        config = {
            "endpoint": receiver.base,
            "labels": {"app": "{{ .app }}", "absent": "{{ .nope }}"},
            "compression": "gzip",
        }
        assert await _send(loopback_client, "loki", config, EVENTS[:1]) == 200
    assert len(receiver.requests) == 2
    assert receiver.requests[1].header("content-encoding") == "gzip"
    assert gzip.decompress(receiver.requests[1].body) == (
        b'{"streams":[{"stream":{"app":"api"},"values":[["1735787045678000000",'
        b'"{\\"message\\":\\"one \xe2\x9c\x93\\",\\"app\\":\\"api\\",'
        b'\\"timestamp\\":1735787045678}"]]}]}'
    )
    assert list(api.streams) == [(("app", "api"),)]


async def test_loki_a_refused_push_is_reported(loopback_client: AppClient) -> None:
    """A multi-tenant Loki refuses a push without its ``X-Scope-OrgID`` (401): final."""
    api = LokiPush(tenant="team-a")
    async with Receiver(respond=api.respond) as receiver:
        config = {"endpoint": receiver.base, "labels": {"job": "x"}}
        assert await _send(loopback_client, "loki", config, EVENTS[:1]) == 503
    assert len(receiver.requests) == 1
    assert api.streams == {}

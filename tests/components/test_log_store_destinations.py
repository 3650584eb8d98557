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

import orjson
from tests.components.factories import wire_source
from tests.components.log_store_apis import ElasticsearchBulk, LokiPush
from tests.components.receiver import Receiver
from tests.conftest import AppClient
from tests.gateway.factories import new_account

from tidegate.components.destinations.elasticsearch import FILTER_PATH

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
    assert (request.method, request.target) == ("POST", f"/_bulk?{FILTER_PATH}&pipeline=geo%20ip")
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
    with ``"errors": true`` and a 400 for that item: refused for good, it is not sent
    again; the delivery fails, reported to the sender, and nothing else of the batch is
    lost."""
    api = ElasticsearchBulk()
    async with Receiver(respond=api.respond) as receiver:
        config = {"endpoints": [receiver.base], "index": "logs-{{ .app }}"}
        events = [{"message": "ok", "app": "api"}, {"message": "bad", "app": "two words"}]
        assert await _send(loopback_client, "elasticsearch", config, events) == 503
    assert len(receiver.requests) == 1  # the answer was read item by item: no retry
    assert api.indices == {"logs-api": [events[0]]}


def _bulk_lines(*events: dict[str, Any]) -> bytes:
    return b"".join(
        b'{"index":{"_index":"plain"}}\n' + orjson.dumps(event) + b"\n" for event in events
    )


async def test_elasticsearch_resends_only_the_items_refused_for_a_while(
    loopback_client: AppClient,
) -> None:
    """The bulk answer read item by item, as Elasticsearch's clients, Logstash and
    Vector do: the documents refused with 429 or a 5xx are sent again, alone (to the
    next endpoint, gzip as the first request), those refused with a 400 (a mapping
    error) are not, and no document taken is sent twice."""
    api = ElasticsearchBulk(refusals={"b": [429], "c": [400], "d": [503, 500]})
    events = [{"message": name, "n": n} for n, name in enumerate("abcde")]
    async with (
        Receiver(respond=api.respond) as first,
        Receiver(respond=api.respond) as second,
    ):
        config = {
            "endpoints": [first.base, second.base],
            "index": "plain",
            "compression": "gzip",
        }
        # c is refused for good: the delivery fails, reported to the sender.
        assert await _send(loopback_client, "elasticsearch", config, events) == 503
    # Each retry to the next endpoint, round robin.
    assert (len(first.requests), len(second.requests)) == (2, 1)
    sent = [first.requests[0], second.requests[0], first.requests[1]]
    assert [gzip.decompress(request.body) for request in sent] == [
        _bulk_lines(*events),
        _bulk_lines(events[1], events[3]),  # b (429) and d (503), not c (400)
        _bulk_lines(events[3]),  # d (500 the second time)
    ]
    assert all(request.header("content-encoding") == "gzip" for request in sent)
    # Every document taken once: a, e at first, then b, then d.
    assert api.indices == {"plain": [events[0], events[4], events[1], events[3]]}


async def test_elasticsearch_a_partial_retry_that_ends_well_is_delivered(
    loopback_client: AppClient,
) -> None:
    api = ElasticsearchBulk(refusals={"b": [429, 429]})
    events = [{"message": name} for name in "abc"]
    async with Receiver(respond=api.respond) as receiver:
        config = {"endpoints": [receiver.base], "index": "plain"}
        assert await _send(loopback_client, "elasticsearch", config, events) == 200
    assert [request.body for request in receiver.requests] == [
        _bulk_lines(*events),
        _bulk_lines(events[1]),
        _bulk_lines(events[1]),
    ]
    assert api.indices == {"plain": [events[0], events[2], events[1]]}


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

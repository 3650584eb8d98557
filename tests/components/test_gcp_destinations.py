"""The ``gcp-cloud-pubsub``, ``gcp-cloud-operations``, ``gcp-cloud-storage`` and
``gcp-cloud-monitoring`` destinations in published pipelines, delivering to protocol-exact receivers of Google's
documented APIs (``tests/components/google_apis.py``) that the operator pointed the
types at (``TIDEGATE_DESTINATION_ENDPOINTS``), with a real service account key whose
``token_uri`` is the receiver's token endpoint: the JWT each token costs is verified
there (RS256 signature, ``kid``, claims), and each API takes only the bearer tokens
issued for its scope. What arrives is compared byte for byte; a 5xx is retried, a 4xx
is not (the gateway then asks the sender to retry)."""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from tests.components.factories import wire_source
from tests.components.google_apis import SCOPES, Google, ServiceAccountKey
from tests.components.receiver import Receiver
from tests.conftest import AppClient, make_settings, running_client
from tests.gateway.factories import new_account
from tests.waiting import eventually

from tidegate.clock import now_ms
from tidegate.logs.timestamps import rfc3339_ms

EVENTS = [
    {"message": "one ✓", "app": "api", "timestamp": 1_735_787_045_678, "level": "warn"},
    {"line": "two", "app": "db", "nested": {"n": 2}},
    {"app": "no text", "severity": "shouting"},
]


@dataclass
class Env:
    client: AppClient
    google: Google
    receiver: Receiver


@pytest.fixture(scope="module")
async def env(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Env]:
    google = Google(ServiceAccountKey.make(""))
    async with Receiver(respond=google.respond) as receiver:
        google.key.token_uri = f"{receiver.base}/token"
        base = receiver.base
        settings = make_settings(
            database_url,
            tmp_path_factory.mktemp("data"),
            destination_allow="127.0.0.1/32",
            destination_endpoints=(
                f"gcp-cloud-pubsub={base},gcp-cloud-operations={base},"
                f"gcp-cloud-storage={base},gcp-cloud-monitoring={base}"
            ),
        )
        async with running_client(settings) as http:
            yield Env(http, google, receiver)


async def _send(env: Env, type_: str, config: dict[str, Any], events: list[Any]) -> tuple[int, str]:
    account = await new_account(env.client, throttle=False)
    wired = await wire_source(
        env.client, account, "http", {}, [("out", "destination", type_, config, ["source"])]
    )
    sent = await env.client.post(wired.url, json=events, headers=wired.auth)
    return sent.status_code, sent.text


def _pubsub(env: Env, **fields: Any) -> dict[str, Any]:
    # destinations/gcp_cloud_pubsub.go: GcpCloudPubSubDestinationFromModel sends all five.
    return {
        "ack_enabled": True,
        "encoding": "text",
        "project_id": "proj-1",
        "topic": "events",
        "credentials_json": env.google.key.json(),
        **fields,
    }


def _requests_to(env: Env, before: int, prefix: str) -> list[Any]:
    return [r for r in env.receiver.requests[before:] if r.target.startswith(prefix)]


@pytest.mark.parametrize("encoding", ["text", "json"])
async def test_pubsub_publishes_each_event_byte_for_byte(env: Env, encoding: str) -> None:
    before = len(env.receiver.requests)
    status, text = await _send(env, "gcp-cloud-pubsub", _pubsub(env, encoding=encoding), EVENTS)
    assert status == 200, text
    [publish] = _requests_to(env, before, "/v1/")
    assert publish.target == "/v1/projects/proj-1/topics/events:publish"
    assert publish.header("Content-Type") == "application/json"
    scope = env.google.tokens[publish.header("Authorization").removeprefix("Bearer ")]
    assert scope == SCOPES["pubsub"]
    if encoding == "text":
        datas = [b"one \xe2\x9c\x93", b"two", b'{"app":"no text","severity":"shouting"}']
    else:
        datas = [
            b'{"message":"one \xe2\x9c\x93","app":"api","timestamp":1735787045678,"level":"warn"}',
            b'{"line":"two","app":"db","nested":{"n":2}}',
            b'{"app":"no text","severity":"shouting"}',
        ]
    expected = (
        b'{"messages":['
        + b",".join(b'{"data":"' + base64.b64encode(data) + b'"}' for data in datas)
        + b"]}"
    )
    assert publish.body == expected


async def test_a_token_is_fetched_once_and_reused(env: Env) -> None:
    """Two deliveries of one node: one JWT exchanged (its claims as Google's libraries
    make them), the same bearer token on both publishes."""
    account = await new_account(env.client, throttle=False)
    wired = await wire_source(
        env.client, account, "http", {},
        [("out", "destination", "gcp-cloud-pubsub", _pubsub(env), ["source"])],
    )  # fmt: skip
    before, assertions = len(env.receiver.requests), len(env.google.assertions)
    for n in range(2):
        sent = await env.client.post(wired.url, json=[{"message": f"m{n}"}], headers=wired.auth)
        assert sent.status_code == 200, sent.text
    tokens = [r.header("Authorization") for r in _requests_to(env, before, "/v1/")]
    assert len(tokens) == 2
    assert tokens[0] == tokens[1]
    [claims] = env.google.assertions[assertions:]
    assert claims["iss"] == env.google.key.email
    assert claims["aud"] == env.google.key.token_uri
    assert claims["scope"] == SCOPES["pubsub"]


async def test_pubsub_batches_keep_to_the_api_limits(env: Env) -> None:
    before = len(env.google.published)
    events = [{"message": f"line {n}"} for n in range(1_500)]
    status, text = await _send(env, "gcp-cloud-pubsub", _pubsub(env), events)
    assert status == 200, text
    batches = env.google.published[before:]
    assert sorted(len(batch["messages"]) for batch in batches) == [500, 1_000]
    sent = sorted(base64.b64decode(m["data"]).decode() for b in batches for m in b["messages"])
    assert sent == sorted(f"line {n}" for n in range(1_500))


async def test_a_5xx_is_retried_and_a_4xx_is_not(env: Env) -> None:
    before = len(env.receiver.requests)
    env.google.faults["pubsub"] = [503]
    status, text = await _send(env, "gcp-cloud-pubsub", _pubsub(env), EVENTS[:1])
    assert status == 200, text
    assert len(_requests_to(env, before, "/v1/")) == 2

    before = len(env.receiver.requests)
    env.google.faults["pubsub"] = [403]
    status, text = await _send(env, "gcp-cloud-pubsub", _pubsub(env), EVENTS[:1])
    assert status == 503, text
    assert len(_requests_to(env, before, "/v1/")) == 1


async def test_a_refused_key_fails_the_delivery_without_publishing(env: Env) -> None:
    """The token endpoint's 400 invalid_grant is final: nothing is published, the
    sender is asked to retry."""
    before = len(env.receiver.requests)
    env.google.token_faults[:] = [(400, {"error": "invalid_grant"})]
    status, text = await _send(env, "gcp-cloud-pubsub", _pubsub(env), EVENTS[:1])
    assert status == 503, text
    assert [r.target for r in env.receiver.requests[before:]] == ["/token"]


async def test_a_key_signed_by_another_key_is_refused_by_the_token_endpoint(env: Env) -> None:
    """The receiver verifies the signature: a key file whose private key is not the
    account's gets no token (so the check above is real)."""
    other = ServiceAccountKey.make(env.google.key.token_uri)
    before = len(env.receiver.requests)
    status, text = await _send(
        env, "gcp-cloud-pubsub", _pubsub(env, credentials_json=other.json()), EVENTS[:1]
    )
    assert status == 503, text
    assert [r.target for r in env.receiver.requests[before:]] == ["/token"]


async def test_the_providers_placeholder_credentials_are_saved_and_fail_delivery(
    env: Env,
) -> None:
    """The provider's own tests send credentials_json "{}": saved as sent, and a
    delivery fails (nothing sent, the sender retries)."""
    before = len(env.receiver.requests)
    status, text = await _send(env, "gcp-cloud-pubsub", _pubsub(env, credentials_json="{}"), EVENTS)
    assert status == 503, text
    assert env.receiver.requests[before:] == []


async def test_unacknowledged_delivery_answers_first(env: Env) -> None:
    before = len(env.google.published)
    status, text = await _send(
        env, "gcp-cloud-pubsub", _pubsub(env, ack_enabled=False, topic="later"), EVENTS[:1]
    )
    assert status == 200, text
    published = await eventually(
        lambda: [b for b in env.google.published[before:] if b["topic"] == "later"] or None,
        what="the background publish",
    )
    assert base64.b64decode(published[0]["messages"][0]["data"]) == b"one \xe2\x9c\x93"


@pytest.mark.parametrize(
    "token_uri", ["http://10.1.2.3/token", "http://169.254.169.254/computeMetadata/v1/token"]
)
async def test_a_token_uri_on_a_private_address_is_refused_on_save(
    env: Env, token_uri: str
) -> None:
    key = ServiceAccountKey.make(token_uri)
    account = await new_account(env.client, throttle=False)
    with pytest.raises(AssertionError, match="400"):
        await wire_source(
            env.client, account, "http", {},
            [("out", "destination", "gcp-cloud-pubsub",
              _pubsub(env, credentials_json=key.json()), ["source"])],
        )  # fmt: skip


def _operations(env: Env, **fields: Any) -> dict[str, Any]:
    # destinations/gcp_cloud_operations.go: every attribute, labels as a list.
    return {
        "ack_enabled": True,
        "credentials_json": env.google.key.json(),
        "project_id": "proj-1",
        "log_id": "app/requests",
        "resource_type": "global",
        "resource_labels": [{"label_name": "project_id", "label_value": "proj-1"}],
        **fields,
    }


async def test_cloud_logging_entries_byte_for_byte(env: Env) -> None:
    before = len(env.receiver.requests)
    status, text = await _send(env, "gcp-cloud-operations", _operations(env), EVENTS)
    assert status == 200, text
    [write] = _requests_to(env, before, "/v2/")
    assert write.target == "/v2/entries:write"
    assert write.header("Content-Type") == "application/json"
    scope = env.google.tokens[write.header("Authorization").removeprefix("Bearer ")]
    assert scope == SCOPES["logging"]
    assert write.body == (
        b'{"logName":"projects/proj-1/logs/app%2Frequests",'
        b'"resource":{"type":"global","labels":{"project_id":"proj-1"}},"entries":['
        b'{"jsonPayload":{"message":"one \xe2\x9c\x93","app":"api","timestamp":1735787045678,'
        b'"level":"warn"},"timestamp":"2025-01-02T03:04:05.678Z","severity":"WARNING"},'
        b'{"jsonPayload":{"line":"two","app":"db","nested":{"n":2}}},'
        b'{"jsonPayload":{"app":"no text","severity":"shouting"}}]}'
    )


async def test_cloud_logging_failures(env: Env) -> None:
    before = len(env.receiver.requests)
    env.google.faults["logging"] = [500, 503]
    status, text = await _send(env, "gcp-cloud-operations", _operations(env), EVENTS[:1])
    assert status == 200, text
    assert len(_requests_to(env, before, "/v2/")) == 3
    before = len(env.receiver.requests)
    env.google.faults["logging"] = [400]
    status, text = await _send(env, "gcp-cloud-operations", _operations(env), EVENTS[:1])
    assert status == 503, text
    assert len(_requests_to(env, before, "/v2/")) == 1


def _storage(env: Env, **fields: Any) -> dict[str, Any]:
    # destinations/gcp_cloud_storage.go: every attribute, bucket_prefix when set.
    return {
        "ack_enabled": True,
        "batch_timeout_secs": 300,
        "encoding": "text",
        "bucket": "logs",
        "compression": "none",
        "credentials_json": env.google.key.json(),
        **fields,
    }


@pytest.mark.parametrize(
    ("fields", "suffix", "content_type", "data"),
    [
        (
            {},
            ".log",
            "text/plain; charset=utf-8",
            b'one \xe2\x9c\x93\ntwo\n{"app":"no text","severity":"shouting"}\n',
        ),
        (
            {"encoding": "json", "compression": "gzip", "bucket_prefix": "gcp/"},
            ".json.gz",
            "application/json",
            b'[{"message":"one \xe2\x9c\x93","app":"api","timestamp":1735787045678,"level":"warn"},'
            b'{"line":"two","app":"db","nested":{"n":2}},{"app":"no text","severity":"shouting"}]',
        ),
    ],
)
async def test_cloud_storage_objects_byte_for_byte(
    env: Env, fields: dict[str, Any], suffix: str, content_type: str, data: bytes
) -> None:
    before = set(env.google.objects)
    status, text = await _send(env, "gcp-cloud-storage", _storage(env, **fields), EVENTS)
    assert status == 200, text
    [name] = set(env.google.objects) - before
    metadata, stored = env.google.objects[name]
    prefix = fields.get("bucket_prefix", "")
    assert name.startswith(f"logs/{prefix}")
    assert name.endswith(suffix)
    assert metadata["contentType"] == content_type
    if fields.get("compression") == "gzip":
        assert metadata["contentEncoding"] == "gzip"
        stored = gzip.decompress(stored)
    else:
        assert "contentEncoding" not in metadata
    assert stored == data
    upload = env.receiver.requests[-1]
    assert upload.target == "/upload/storage/v1/b/logs/o?uploadType=multipart"
    scope = env.google.tokens[upload.header("Authorization").removeprefix("Bearer ")]
    assert scope == SCOPES["storage"]


async def test_cloud_storage_missing_bucket_is_not_retried(env: Env) -> None:
    before = len(env.receiver.requests)
    status, text = await _send(env, "gcp-cloud-storage", _storage(env, bucket="nope"), EVENTS)
    assert status == 503, text
    assert len(_requests_to(env, before, "/upload/")) == 1


def _monitoring(env: Env, **fields: Any) -> dict[str, Any]:
    # destinations/gcp_cloud_monitoring.go: every attribute, labels as a list.
    return {
        "ack_enabled": True,
        "credentials_json": env.google.key.json(),
        "project_id": "proj-1",
        "resource_type": "global",
        "resource_labels": [{"label_name": "project_id", "label_value": "proj-1"}],
        **fields,
    }


async def test_cloud_monitoring_time_series(env: Env) -> None:
    """Gauges, cumulative counters (an incremental one as a running total across
    deliveries), a histogram's count and sum; one point per series per request (the
    last); other events skipped."""
    account = await new_account(env.client, throttle=False)
    steps = [("out", "destination", "gcp-cloud-monitoring", _monitoring(env), ["source"])]
    wired = await wire_source(env.client, account, "http", {}, steps)
    # Times after the node was built (a cumulative series starts then).
    at = now_ms() + 60_000
    t = rfc3339_ms
    events = [
        {"name": "requests", "namespace": "web", "kind": "incremental",
         "value": {"type": "counter", "value": 2}, "tags": {"code": 200, "1st": "x"},
         "timestamp": at},
        {"name": "temperature", "kind": "absolute", "value": {"type": "gauge", "value": 20},
         "timestamp": at},
        {"name": "temperature", "kind": "absolute", "value": {"type": "gauge", "value": 21.5},
         "timestamp": at + 1000},
        {"name": "requests", "namespace": "web", "kind": "incremental",
         "value": {"type": "counter", "value": 3}, "tags": {"code": 200, "1st": "x"},
         "timestamp": at + 1000},
        {"name": "uptime", "kind": "absolute", "value": {"type": "sum", "value": 99},
         "start_timestamp": at - 60_000, "timestamp": at},
        {"name": "latency", "kind": "absolute", "timestamp": at,
         "value": {"type": "histogram", "value": {"count": 4, "sum": 2.5, "buckets": []}}},
        {"message": "not a metric"},
    ]  # fmt: skip
    before = len(env.receiver.requests)
    sent = await env.client.post(wired.url, json=events, headers=wired.auth)
    assert sent.status_code == 200, sent.text
    [request] = _requests_to(env, before, "/v3/")
    assert request.target == "/v3/projects/proj-1/timeSeries"
    scope = env.google.tokens[request.header("Authorization").removeprefix("Bearer ")]
    assert scope == SCOPES["monitoring"]
    series = json.loads(request.body)["timeSeries"]
    resource = {"type": "global", "labels": {"project_id": "proj-1"}}
    assert all(item.pop("resource") == resource for item in series)
    start = series[1]["points"][0]["interval"]["startTime"]
    assert start < t(at)

    def point(value: float, end: str, begin: str | None = None) -> list[dict[str, Any]]:
        interval = {"endTime": end} if begin is None else {"startTime": begin, "endTime": end}
        return [{"interval": interval, "value": {"doubleValue": value}}]

    assert series == [
        {"metric": {"type": "custom.googleapis.com/temperature", "labels": {}},
         "metricKind": "GAUGE", "valueType": "DOUBLE",
         "points": point(21.5, t(at + 1000))},
        {"metric": {"type": "custom.googleapis.com/web/requests",
                    "labels": {"code": "200", "t_1st": "x"}},
         "metricKind": "CUMULATIVE", "valueType": "DOUBLE",
         "points": point(5.0, t(at + 1000), start)},
        {"metric": {"type": "custom.googleapis.com/uptime", "labels": {}},
         "metricKind": "CUMULATIVE", "valueType": "DOUBLE",
         "points": point(99.0, t(at), t(at - 60_000))},
        {"metric": {"type": "custom.googleapis.com/latency_count", "labels": {}},
         "metricKind": "CUMULATIVE", "valueType": "DOUBLE",
         "points": point(4.0, t(at), start)},
        {"metric": {"type": "custom.googleapis.com/latency_sum", "labels": {}},
         "metricKind": "CUMULATIVE", "valueType": "DOUBLE",
         "points": point(2.5, t(at), start)},
    ]  # fmt: skip
    # The next delivery continues the running total, with the same start time.
    before = len(env.receiver.requests)
    again = dict(events[0], timestamp=at + 10_000)
    sent = await env.client.post(wired.url, json=[again], headers=wired.auth)
    assert sent.status_code == 200, sent.text
    [request] = _requests_to(env, before, "/v3/")
    [item] = json.loads(request.body)["timeSeries"]
    assert item["points"] == point(7.0, t(at + 10_000), start)


async def test_cloud_monitoring_batches_and_failures(env: Env) -> None:
    events = [
        {"name": f"m{n}", "kind": "absolute", "value": {"type": "gauge", "value": n}}
        for n in range(450)
    ]
    before = len(env.google.time_series)
    status, text = await _send(env, "gcp-cloud-monitoring", _monitoring(env), events)
    assert status == 200, text
    batches = env.google.time_series[before:]
    assert sorted(len(batch["timeSeries"]) for batch in batches) == [50, 200, 200]
    before = len(env.receiver.requests)
    env.google.faults["monitoring"] = [503]
    status, text = await _send(env, "gcp-cloud-monitoring", _monitoring(env), events[:1])
    assert status == 200, text
    assert len(_requests_to(env, before, "/v3/")) == 2
    before = len(env.receiver.requests)
    env.google.faults["monitoring"] = [400]
    status, text = await _send(env, "gcp-cloud-monitoring", _monitoring(env), events[:1])
    assert status == 503, text
    assert len(_requests_to(env, before, "/v3/")) == 1


def test_the_credentials_are_checked_on_save() -> None:
    from tidegate.components.destinations.gcp_cloud_pubsub import GcpCloudPubSubConfig

    base = {"project_id": "p", "topic": "t"}
    for good in ("{}", '{"foo": "bar"}', ServiceAccountKey.make("https://oauth2.example/t").json()):
        GcpCloudPubSubConfig.model_validate({**base, "credentials_json": good})
    for bad in (
        "not json",
        "[]",
        json.dumps({"type": "authorized_user", "refresh_token": "x"}),
        json.dumps({"type": "service_account", "private_key": "not a key"}),
        json.dumps({"token_uri": "file:///etc/passwd"}),
    ):
        with pytest.raises(
            ValueError, match=r"credentials_json|not supported|private_key|token_uri"
        ):
            GcpCloudPubSubConfig.model_validate({**base, "credentials_json": bad})


def test_a_key_over_4096_bits_is_refused_on_save_and_fails_delivery() -> None:
    """Reading a tenant's key checks its size, not its primes: OpenSSL's consistency
    check took 2.9 s of the event loop for an 8,192-bit key here (gcp.py's docstring).
    A key saved before the size check fails its deliveries, without being checked."""
    from tidegate.components.destinations.gcp import ServiceAccount, assertion
    from tidegate.components.destinations.gcp_cloud_pubsub import GcpCloudPubSubConfig
    from tidegate.delivery import DeliveryFailed

    key = ServiceAccountKey.make("https://oauth2.example/t")
    key.private = rsa.generate_private_key(public_exponent=65537, key_size=4608)
    base = {"project_id": "p", "topic": "t"}
    with pytest.raises(ValueError, match="at most 4096 bits"):
        GcpCloudPubSubConfig.model_validate({**base, "credentials_json": key.json()})
    pem = json.loads(key.json())["private_key"]
    account = ServiceAccount(key.email, pem, key.key_id, key.token_uri)
    with pytest.raises(DeliveryFailed, match="at most 4096 bits"):
        assertion(account, "scope", 0)

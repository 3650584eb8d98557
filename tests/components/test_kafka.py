"""The ``kafka`` destination and source and the ``azure-event-hub`` source without a
broker (none can run here): the exact records handed to the producer, the decoding of
consumed values, a real refused TCP connection to a closed local port (retries,
counters, no crash, a clean stop), the destination guard on brokers, and the runtimes'
lifecycle. ``docs/components.md``, "Kafka", says what this does not cover."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from typing import Any

import pytest
from prometheus_client import REGISTRY as PROMETHEUS
from pydantic import ValidationError
from tests.conftest import AppClient
from tests.factories import make_account, make_tenant
from tests.pipelines.factories import assert_v3_error, make_pipeline

from tidegate.components.base import NodeRef
from tidegate.components.destinations.kafka import (
    MAX_RECORD_BYTES,
    KafkaDestinationConfig,
    KafkaProducerRuntime,
    KafkaRecord,
    kafka_records,
)
from tidegate.components.kafka_wire import client_options, settings_of, vet_brokers
from tidegate.components.sources.azure_event_hub import (
    AzureEventHubSourceConfig,
    event_hubs_settings,
)
from tidegate.components.sources.kafka import KafkaSourceConfig
from tidegate.components.sources.kafka_consumer import (
    ConsumerRuntime,
    KafkaSourceFailed,
    decode_records,
)
from tidegate.components.sources.pull import PullContext
from tidegate.delivery import DeliveryFailed
from tidegate.errors import ValidationFailed
from tidegate.kit.destination_guard import DestinationPolicy
from tidegate.runtime.compiler import NodeRuntimes

LOOPBACK = DestinationPolicy(networks=(ipaddress.ip_network("127.0.0.0/8"),))


def _destination(**extra: Any) -> KafkaDestinationConfig:
    body = {"brokers": [{"host": "mezmo.com", "port": 9092}], "topic": "logs", **extra}
    return KafkaDestinationConfig.model_validate(body)


def _closed_port() -> int:
    """A local port nothing listens on (bound, then closed): connecting is refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def _metric(operation: str, outcome: str) -> float:
    value = PROMETHEUS.get_sample_value(
        "tidegate_kafka_operations_total", {"operation": operation, "outcome": outcome}
    )
    return value or 0.0


# --- the records handed to the producer ---------------------------------------------


def test_json_records_carry_the_event_key_and_timestamp() -> None:
    config = _destination(encoding="json", event_key_field=".user.id")
    events = [
        {"message": "a ✓", "user": {"id": "u-1"}, "timestamp": 1735787045678},
        {"message": "b", "user": {"id": 42}},
        {"message": "c", "user": {"id": None}},
        {"message": "d"},
    ]
    records, skipped = kafka_records(config, events)
    assert skipped == 0
    assert records == [
        KafkaRecord(
            b'{"message":"a \xe2\x9c\x93","user":{"id":"u-1"},"timestamp":1735787045678}',
            b"u-1",
            1735787045678,
        ),
        KafkaRecord(b'{"message":"b","user":{"id":42}}', b"42", None),
        KafkaRecord(b'{"message":"c","user":{"id":null}}', None, None),
        KafkaRecord(b'{"message":"d"}', None, None),
    ]


def test_text_records_are_the_message_else_the_line_else_the_json() -> None:
    config = _destination(event_key_field="app")  # the provider's form: no leading dot
    events = [
        {"message": "hello", "app": "api"},
        {"line": "raw line", "app": {"name": "x", "n": 1}},
        {"level": "info", "timestamp": True},
    ]
    records, _ = kafka_records(config, events)
    assert records == [
        KafkaRecord(b"hello", b"api", None),
        KafkaRecord(b"raw line", b'{"n":1,"name":"x"}', None),
        KafkaRecord(b'{"level":"info","timestamp":true}', None, None),
    ]


def test_a_record_over_the_limit_is_skipped() -> None:
    config = _destination(encoding="text")
    records, skipped = kafka_records(
        config,
        [
            {"message": "x" * (MAX_RECORD_BYTES + 1)},
            {"message": "y" * MAX_RECORD_BYTES},
            {"message": "ok"},
        ],
    )
    assert skipped == 1
    assert records == [KafkaRecord(b"y" * MAX_RECORD_BYTES), KafkaRecord(b"ok")]


def test_producer_settings_follow_the_provider_fields() -> None:
    runtime = KafkaProducerRuntime(
        _destination(compression="zstd", tls_enabled=False, **_sasl("SCRAM-SHA-256")),
        name="n",
        client_id="tidegate-x",
        policy=LOOPBACK,
        backoff_base_s=0.01,
        backoff_cap_s=0.02,
    )
    options = runtime.producer_options()
    assert options["bootstrap_servers"] == ["mezmo.com:9092"]
    assert options["security_protocol"] == "SASL_PLAINTEXT"
    assert options["sasl_mechanism"] == "SCRAM-SHA-256"
    assert (options["sasl_plain_username"], options["sasl_plain_password"]) == ("u", "p")
    assert options["compression_type"] == "zstd"
    assert options["acks"] == "all"
    assert "ssl_context" not in options
    plain = _destination(**_sasl(""))  # the provider's unset mechanism
    tls = client_options(settings_of(plain), "c")
    assert (tls["security_protocol"], tls["sasl_mechanism"]) == ("SASL_SSL", "PLAIN")
    assert tls["ssl_context"].verify_mode.name == "CERT_REQUIRED"
    assert client_options(settings_of(_destination()), "c")["security_protocol"] == "SSL"


def _sasl(mechanism: str) -> dict[str, Any]:
    return {
        "sasl_enabled": True,
        "sasl_username": "u",
        "sasl_password": "p",
        "sasl_mechanism": mechanism,
    }


def test_sasl_enabled_without_credentials_is_refused() -> None:
    with pytest.raises(ValidationError, match="sasl_username and sasl_password"):
        _destination(sasl_enabled=True, sasl_username="u")
    with pytest.raises(ValidationError, match="sasl_username and sasl_password"):
        KafkaSourceConfig.model_validate(
            {
                "brokers": [{"host": "b", "port": 9092}],
                "topics": ["t"],
                "group_id": "g",
                "sasl_enabled": True,
            }
        )
    with pytest.raises(ValidationError, match="distinct"):
        KafkaSourceConfig.model_validate(
            {"brokers": [{"host": "b", "port": 9092}], "topics": ["t", "t"], "group_id": "g"}
        )


# --- decoding consumed records ---------------------------------------------------------


def test_consumed_values_become_events() -> None:
    values: list[bytes | None] = [
        b'{"message":"hi","level":"info"}',
        b"[1,2]",
        b"not json \xff",
        None,
        b'"text"',
    ]
    assert decode_records(values, "json") == [
        {"message": "hi", "level": "info"},
        {"message": [1, 2]},
        {"message": "not json \ufffd"},
        {"message": ""},
        {"message": "text"},
    ]
    assert decode_records([b'{"a":1}', b"nul\x00"], "bytes") == [
        {"message": '{"a":1}'},
        {"message": "nul\ufffd"},
    ]


def test_event_hubs_are_read_through_the_kafka_endpoint() -> None:
    config = AzureEventHubSourceConfig.model_validate(
        {
            "connection_string": "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKey=k",
            "namespace": "ns",
            "group_id": "g",
            "topics": ["hub", "hub"],
        }
    )
    assert config.decoding_codec == "bytes"
    options = client_options(event_hubs_settings(config), "c")
    assert options["bootstrap_servers"] == ["ns.servicebus.windows.net:9093"]
    assert options["security_protocol"] == "SASL_SSL"
    assert options["sasl_mechanism"] == "PLAIN"
    assert options["sasl_plain_username"] == "$ConnectionString"
    assert options["sasl_plain_password"] == config.connection_string
    given = config.model_copy(update={"namespace": "ns.servicebus.chinacloudapi.cn"})
    assert given.host == "ns.servicebus.chinacloudapi.cn"


# --- a real refused connection ----------------------------------------------------------


async def test_a_closed_broker_port_is_retried_counted_and_fails_the_delivery() -> None:
    port = _closed_port()
    runtime = KafkaProducerRuntime(
        _destination(brokers=[{"host": "127.0.0.1", "port": port}], tls_enabled=False),
        name="kafka destination n",
        client_id="tidegate-test-closed",
        policy=LOOPBACK,
        backoff_base_s=0.01,
        backoff_cap_s=0.05,
        max_retries=2,
    )
    retried, failed = _metric("produce", "retried"), _metric("produce", "failed")
    deadline = asyncio.get_running_loop().time() + 120
    with pytest.raises(DeliveryFailed, match=r"KafkaConnectionError.*attempt 3"):
        await runtime.produce([KafkaRecord(b"x")], deadline=deadline)
    assert (runtime.retries, runtime.failures, runtime.produced) == (2, 1, 0)
    assert _metric("produce", "retried") == retried + 2
    assert _metric("produce", "failed") == failed + 1
    await runtime.aclose()
    await runtime.aclose()  # closing twice is harmless


async def test_a_consumer_of_a_closed_port_fails_its_pulls_and_backs_off() -> None:
    runtime = ConsumerRuntime(
        settings_of(
            KafkaSourceConfig.model_validate(
                {
                    "brokers": [{"host": "127.0.0.1", "port": _closed_port()}],
                    "topics": ["t"],
                    "group_id": "g",
                    "tls_enabled": False,
                }
            )
        ),
        topics=["t"],
        group_id="g",
        decoding="json",
        name="kafka source n",
        client_id="tidegate-test-consumer",
        policy=LOOPBACK,
    )
    failed = _metric("connect", "failed")
    context = PullContext(client=None, runtime=runtime)  # type: ignore[arg-type]
    with pytest.raises(KafkaSourceFailed, match=r"KafkaConnectionError.*next try"):
        await runtime.pull(context)
    with pytest.raises(KafkaSourceFailed, match="waiting to try again"):
        await runtime.pull(context)
    assert runtime.failures == 2
    assert _metric("connect", "failed") == failed + 1
    await runtime.aclose()


# --- the destination guard ---------------------------------------------------------------


async def test_a_private_broker_is_refused_at_connect_without_retries() -> None:
    runtime = KafkaProducerRuntime(
        _destination(brokers=[{"host": "127.0.0.1", "port": _closed_port()}]),
        name="kafka destination n",
        client_id="tidegate-test-guard",
        policy=DestinationPolicy(),
        backoff_base_s=0.01,
        backoff_cap_s=0.05,
    )
    refused = _metric("connect", "refused")
    deadline = asyncio.get_running_loop().time() + 120
    with pytest.raises(DeliveryFailed, match="non-public address"):
        await runtime.produce([KafkaRecord(b"x")], deadline=deadline)
    assert runtime.retries == 0
    assert _metric("connect", "refused") == refused + 1
    await runtime.aclose()


async def test_brokers_are_vetted_on_save() -> None:
    private = _destination(
        brokers=[{"host": "mezmo.com", "port": 1}, {"host": "10.1.2.3", "port": 9092}]
    )
    with pytest.raises(ValidationFailed) as caught:
        await vet_brokers(private.brokers, DestinationPolicy())
    assert caught.value.errors[0].instance_path == "/user_config/brokers/1/host"
    await vet_brokers(
        private.brokers,
        DestinationPolicy(networks=(ipaddress.ip_network("10.0.0.0/8"),)),
    )


async def test_private_brokers_and_namespaces_are_a_400_on_save(client: AppClient) -> None:
    account = await make_account(client, await make_tenant(client.database_url))
    pipeline_id = await make_pipeline(client, account)
    cases = [
        (
            "sink",
            "kafka",
            {"brokers": [{"host": "169.254.169.254", "port": 9092}], "topic": "t"},
            "/user_config/brokers/0/host",
        ),
        (
            "source",
            "kafka",
            {"brokers": [{"host": "127.0.0.1", "port": 9092}], "topics": ["t"], "group_id": "g"},
            "/user_config/brokers/0/host",
        ),
        (
            "source",
            "azure-event-hub",
            {
                "connection_string": "c",
                "namespace": "192.168.0.10",
                "group_id": "g",
                "topics": ["t"],
            },
            "/user_config/namespace",
        ),
    ]
    for segment, type_, user_config, path in cases:
        response = await client.post(
            f"/v3/pipeline/{pipeline_id}/{segment}",
            json={"type": type_, "title": "t", "inputs": [], "user_config": user_config},
            headers=account.headers,
        )
        body = assert_v3_error(response, 400)
        assert [error["instance_path"] for error in body["errors"]] == [path], body


# --- lifecycle -------------------------------------------------------------------------------


class _Closing:
    def __init__(self) -> None:
        self.closed = 0

    async def aclose(self) -> None:
        self.closed += 1


async def test_node_runtimes_are_closed_when_replaced_forgotten_or_stopped() -> None:
    runtimes = NodeRuntimes()
    first, second, third = _Closing(), _Closing(), _Closing()
    runtimes.get(NodeRef("p", "a", "n", "f1"), lambda: first)
    assert runtimes.get(NodeRef("p", "a", "n", "f1"), _Closing) is first
    runtimes.get(NodeRef("p", "a", "n", "f2"), lambda: second)  # the node changed
    runtimes.get(NodeRef("p", "a", "m", "f1"), lambda: third)
    runtimes.keep_only("p", {"n"})  # node m deleted
    await runtimes.aclose()  # the worker stops
    assert (first.closed, second.closed, third.closed) == (1, 1, 1)
    assert len(runtimes) == 0

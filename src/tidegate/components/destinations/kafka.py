"""The ``kafka`` destination: events produced to a Kafka topic, as the platform's
Terraform provider writes the node (``internal/provider/models/destinations/kafka.go``):
``brokers [{host, port}]``, ``topic``, ``encoding`` (``text``, the default, or
``json``), ``compression`` (``none``, the default, ``gzip``, ``lz4``, ``snappy``,
``zstd``), ``event_key_field``, ``tls_enabled`` (default true), ``sasl_enabled`` with
``sasl_username``, ``sasl_password``, ``sasl_mechanism`` (``PLAIN``, ``SCRAM-SHA-256``,
``SCRAM-SHA-512``; ``""`` when the provider leaves it unset: ``PLAIN``),
``ack_enabled``. ``group_id`` (in the provider's test data, not in its schema) is
accepted, stored and not used.

One record per event (``kafka_records``, a pure function): the value is the event's
JSON (``json``) or its ``message``, else ``line``, else its JSON (``text``), as the
other destinations encode; the key the value at ``event_key_field`` (a string as its
UTF-8 bytes, another value as its compact JSON, no key when the field is absent or
null); the record's timestamp the event's ``timestamp`` when it is epoch milliseconds;
no headers. A record over ``MAX_RECORD_BYTES`` is skipped and logged (a broker refuses
it, and retrying would hold the pipeline for ever).

Produced with ``aiokafka`` (one producer per node and worker, started at the first
delivery, closed when the node changes, goes, or the worker stops): ``acks=all``,
the configured compression, the client's own batching per partition (``linger_ms``
5, batches of at most 1 MiB; ``send`` waits while a partition's batch is full, so
memory stays bounded). A delivery waits for every record's acknowledgement; a
connection failure or a retriable broker error retries the whole delivery with
backoff (``TIDEGATE`` runtime limits), at most ``MAX_RETRIES`` times, within the
delivery deadline (records may then be produced twice: at-least-once). Brokers go
through the destination guard (``components/kafka_wire.py``). ``ack_enabled: false``
answers the gateway without waiting, as the other outbound destinations.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tidegate.components.base import BuildContext, Component, DeliveryContext, NodeRef, Parcel
from tidegate.components.destinations.http import encode_event
from tidegate.components.destinations.outbound import acknowledged_delivery
from tidegate.components.kafka_wire import (
    Brokers,
    KafkaClientSettings,
    SaslMechanism,
    Secret,
    backoff_s,
    client_options,
    count,
    forget_client,
    install_guard,
    refusal_of,
    register_client,
    settings_of,
    vet_brokers,
)
from tidegate.components.processors.kit import FieldText
from tidegate.delivery import DeliveryFailed
from tidegate.kit.destination_guard import DestinationPolicy
from tidegate.processing.fields import MISSING, FieldPath, string_form

__all__ = [
    "COMPONENT",
    "MAX_RECORD_BYTES",
    "KafkaDestinationConfig",
    "KafkaProducerRuntime",
    "KafkaRecord",
    "kafka_records",
]

log = logging.getLogger("tidegate.runtime.kafka")

MAX_RECORD_BYTES: Final = 1_000_000  # the brokers' default message.max.bytes, about
MAX_REQUEST_BYTES: Final = 1_048_576
MAX_RETRIES: Final = 5
_MAX_TIMESTAMP_MS: Final = 2**63 - 1


class KafkaDestinationConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    brokers: Brokers
    topic: Annotated[str, Field(min_length=1, max_length=249)]
    encoding: Literal["json", "text"] = "text"
    compression: Literal["gzip", "lz4", "snappy", "zstd", "none"] = "none"
    event_key_field: FieldText | None = None
    tls_enabled: bool = True
    ack_enabled: bool = True
    sasl_enabled: bool = False
    sasl_username: Secret | None = None
    sasl_password: Secret | None = None
    sasl_mechanism: SaslMechanism | None = None
    group_id: Annotated[str, Field(max_length=256)] | None = None

    @model_validator(mode="after")
    def _sasl_complete(self) -> KafkaDestinationConfig:
        if self.sasl_enabled and (self.sasl_username is None or self.sasl_password is None):
            raise ValueError("sasl_enabled needs sasl_username and sasl_password")
        return self

    @property
    def settings(self) -> KafkaClientSettings:
        return settings_of(self)


@dataclass(frozen=True, slots=True)
class KafkaRecord:
    """What the producer is handed for one event."""

    value: bytes
    key: bytes | None = None
    timestamp_ms: int | None = None


def _key(value: Any) -> bytes | None:
    if value is MISSING or value is None:
        return None
    return string_form(value).encode("utf-8", "surrogatepass")


def _timestamp(event: Any) -> int | None:
    value = event.get("timestamp") if isinstance(event, dict) else None
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _MAX_TIMESTAMP_MS:
        return value
    return None


def kafka_records(
    config: KafkaDestinationConfig, events: Sequence[Any]
) -> tuple[list[KafkaRecord], int]:
    """The records for ``events`` and how many were skipped as too large (CPU work: may
    run in a worker thread)."""
    read = None if config.event_key_field is None else FieldPath.parse(config.event_key_field)
    getter = None if read is None else read.getter()
    records: list[KafkaRecord] = []
    skipped = 0
    for event in events:
        value = encode_event(event, config.encoding)
        key = None
        if getter is not None:
            key = _key(getter(event) if isinstance(event, (dict, list)) else MISSING)
        if len(value) + len(key or b"") > MAX_RECORD_BYTES:
            skipped += 1
            continue
        records.append(KafkaRecord(value, key, _timestamp(event)))
    return records, skipped


def _retriable(error: Exception) -> bool:
    from aiokafka.errors import KafkaConnectionError, KafkaError, KafkaTimeoutError

    if isinstance(error, (OSError, KafkaConnectionError, KafkaTimeoutError)):
        return True
    return isinstance(error, KafkaError) and bool(getattr(error, "retriable", False))


class KafkaProducerRuntime:
    """One node's producer on one worker (started when first needed)."""

    def __init__(
        self,
        config: KafkaDestinationConfig,
        *,
        name: str,
        client_id: str,
        policy: DestinationPolicy,
        backoff_base_s: float,
        backoff_cap_s: float,
        max_retries: int = MAX_RETRIES,
    ) -> None:
        self.config = config
        self.name = name
        self.client_id = client_id
        self._policy = policy
        self._base = backoff_base_s
        self._cap = backoff_cap_s
        self._max_retries = max_retries
        self._producer: Any = None
        self._lock = asyncio.Lock()
        self.produced = 0
        self.retries = 0
        self.failures = 0
        self.skipped = 0

    def producer_options(self) -> dict[str, Any]:
        compression = None if self.config.compression == "none" else self.config.compression
        return {
            **client_options(self.config.settings, self.client_id),
            "acks": "all",
            "compression_type": compression,
            "linger_ms": 5,
            "max_batch_size": MAX_REQUEST_BYTES,
            "max_request_size": MAX_REQUEST_BYTES,
            "enable_idempotence": False,
        }

    async def _started(self) -> Any:
        async with self._lock:
            if self._producer is None:
                from aiokafka import AIOKafkaProducer

                install_guard()
                register_client(self.client_id, self._policy)
                producer = AIOKafkaProducer(**self.producer_options())
                try:
                    await producer.start()
                except BaseException:
                    await producer.stop()
                    raise
                count("connect", "ok")
                self._producer = producer
            return self._producer

    async def _reset(self) -> None:
        async with self._lock:
            producer, self._producer = self._producer, None
        if producer is not None:
            await producer.stop()

    async def produce(self, records: Sequence[KafkaRecord], *, deadline: float) -> None:
        """Every record acknowledged by the brokers, or ``DeliveryFailed``."""
        loop = asyncio.get_running_loop()
        attempt = 0
        while True:
            try:
                async with asyncio.timeout_at(deadline):
                    producer = await self._started()
                    pending = [
                        await producer.send(
                            self.config.topic,
                            value=record.value,
                            key=record.key,
                            timestamp_ms=record.timestamp_ms,
                        )
                        for record in records
                    ]
                    await asyncio.gather(*pending)
            except TimeoutError:
                self._failed(len(records))
                raise DeliveryFailed(f"{self.name}: slower than the delivery deadline") from None
            except Exception as error:
                reason = f"{type(error).__name__}: {error}".rstrip(": ")
                refused = refusal_of(self.client_id)
                if refused is not None:
                    self._failed(len(records), outcome="refused")
                    await self._reset()
                    raise DeliveryFailed(f"{self.name}: {refused}") from None
                if not _retriable(error) or attempt >= self._max_retries:
                    self._failed(len(records))
                    raise DeliveryFailed(f"{self.name}: {reason} (attempt {attempt + 1})") from None
                await self._reset()
                delay = backoff_s(attempt, base_s=self._base, cap_s=self._cap)
                if loop.time() + delay >= deadline:
                    self._failed(len(records))
                    raise DeliveryFailed(f"{self.name}: {reason}; no time left to retry") from None
                self.retries += 1
                count("produce", "retried", len(records))
                log.info("%s: %s; retry %s in %.2fs", self.name, reason, attempt + 1, delay)
                await asyncio.sleep(delay)
                attempt += 1
                continue
            self.produced += len(records)
            count("produce", "ok", len(records))
            return

    def _failed(self, records: int, *, outcome: str = "failed") -> None:
        self.failures += 1
        count("produce", outcome, records)

    async def aclose(self) -> None:
        """Stop the producer (pending records are flushed by ``aiokafka``'s stop)."""
        await self._reset()
        forget_client(self.client_id)


async def _send(parcel: Parcel, context: DeliveryContext, deadline: float) -> None:
    runtime: KafkaProducerRuntime = parcel.runtime
    records, skipped = await context.offload(
        partial(kafka_records, runtime.config, parcel.events), work=len(parcel.events)
    )
    if skipped:
        runtime.skipped += skipped
        log.warning("%s: %s events over %s bytes skipped", runtime.name, skipped, MAX_RECORD_BYTES)
    if records:
        await runtime.produce(records, deadline=deadline)


def _build(
    config: KafkaDestinationConfig, context: BuildContext, node: NodeRef
) -> KafkaProducerRuntime:
    return KafkaProducerRuntime(
        config,
        name=f"kafka destination {node.node_id} of pipeline {node.pipeline_id}",
        client_id=f"tidegate-{node.node_id}-{node.fingerprint[:12]}",
        policy=context.destination_policy or DestinationPolicy(),
        backoff_base_s=context.backoff_base_ms / 1000,
        backoff_cap_s=context.backoff_cap_ms / 1000,
    )


async def _vet(config: KafkaDestinationConfig, policy: DestinationPolicy) -> None:
    await vet_brokers(config.brokers, policy)


COMPONENT: Component[KafkaDestinationConfig] = Component(
    kind="destination",
    type="kafka",
    config_model=KafkaDestinationConfig,
    build=_build,
    describe="Events produced to a Kafka topic (`brokers`, `topic`, `encoding`, "
    "`compression`, `event_key_field`, TLS and SASL), retried with backoff",
    deliver=acknowledged_delivery(_send, lambda parcel: parcel.runtime.config.ack_enabled),
    vet=_vet,
    outbound=True,
)

"""A Kafka consumer as a pull source (``sources/pull.py``): what the ``kafka`` and
``azure-event-hub`` sources run.

One ``aiokafka`` consumer per node and worker, a member of the node's consumer group
(``group_id``) subscribed to its topics: the brokers spread the topics' partitions over
the members, so every worker may run one and no lease is needed between workers. It is
started at the node's first pull, and stopped when the node is no longer pulled (its
pipeline unpublished or deleted, its configuration changed: ``runtime/pull_sources.py``)
or the worker stops; then the group hands its partitions to the other members.

Each pull takes what the consumer has fetched (at most ``MAX_RECORDS`` records, waiting
at most ``WAIT_MS``); the events run through the pipeline, and only once every
destination took them are the offsets committed (``done``). A pull whose events were
not delivered seeks its partitions back to where that batch began, so the records are
read again (at-least-once). A group new to a topic starts at its earliest records.
Memory: at most ``FETCH_MAX_BYTES`` fetched ahead per consumer, ``PARTITION_FETCH_BYTES``
per partition. A consumer that cannot start (brokers down, refused by the destination
guard, authentication) is stopped and started again after a backoff (1 s doubling to
60 s); meanwhile its pulls fail at once, logged and counted.

Decoding (``decoding_codec``): ``bytes``, each record's value is one event
``{"message": <UTF-8 text>}`` (invalid UTF-8 replaced); ``json``, a record whose value
is a JSON object is that event, another JSON value ``{"message": <value>}``, a value
that is not JSON ``{"message": <text>}`` (kept rather than lost). Keys, headers,
topic, partition and offset are not added to the events.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any, Final, Literal

import orjson

from tidegate.components.kafka_wire import (
    KafkaClientSettings,
    backoff_s,
    client_options,
    count,
    forget_client,
    install_guard,
    refusal_of,
    register_client,
)
from tidegate.components.sources.pull import PullContext, Pulled
from tidegate.kit.destination_guard import DestinationPolicy

__all__ = [
    "MAX_RECORDS",
    "ConsumerRuntime",
    "Decoding",
    "KafkaSourceFailed",
    "decode_record",
    "decode_records",
]

log = logging.getLogger("tidegate.runtime.kafka")

Decoding = Literal["bytes", "json"]

MAX_RECORDS: Final = 500
WAIT_MS: Final = 100
FETCH_MAX_BYTES: Final = 8 * 1024 * 1024
PARTITION_FETCH_BYTES: Final = 1024 * 1024
MAX_VALUE_BYTES: Final = 4 * 1024 * 1024
START_TIMEOUT_S: Final = 30.0
RESTART_BASE_S: Final = 1.0
RESTART_CAP_S: Final = 60.0


class KafkaSourceFailed(Exception):
    """The consumer could not start or fetch."""


def decode_record(value: bytes | None, decoding: Decoding) -> dict[str, Any]:
    """One record's value as an event."""
    data = value or b""
    if decoding == "json":
        try:
            document = orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
        else:
            if isinstance(document, dict):
                return document
            return {"message": document}
    return {"message": data.decode("utf-8", "replace").replace("\x00", "\ufffd")}


def decode_records(values: Sequence[bytes | None], decoding: Decoding) -> list[dict[str, Any]]:
    """The events of records' values (a value over ``MAX_VALUE_BYTES`` is cut there and
    read as text)."""
    events = []
    for value in values:
        if value is not None and len(value) > MAX_VALUE_BYTES:
            events.append(decode_record(value[:MAX_VALUE_BYTES], "bytes"))
        else:
            events.append(decode_record(value, decoding))
    return events


class ConsumerRuntime:
    """One node's consumer on one worker."""

    def __init__(
        self,
        settings: KafkaClientSettings,
        *,
        topics: Sequence[str],
        group_id: str,
        decoding: Decoding,
        name: str,
        client_id: str,
        policy: DestinationPolicy,
    ) -> None:
        self.settings = settings
        self.topics = tuple(topics)
        self.group_id = group_id
        self.decoding: Decoding = decoding
        self.name = name
        self.client_id = client_id
        self._policy = policy
        self._consumer: Any = None
        self._pending: dict[Any, int] = {}
        self._not_before = 0.0
        self._failed_starts = 0
        self._lock = asyncio.Lock()
        self.consumed = 0
        self.failures = 0

    def consumer_options(self) -> dict[str, Any]:
        return {
            **client_options(self.settings, self.client_id),
            "group_id": self.group_id,
            "enable_auto_commit": False,
            "auto_offset_reset": "earliest",
            "fetch_max_bytes": FETCH_MAX_BYTES,
            "max_partition_fetch_bytes": PARTITION_FETCH_BYTES,
            "max_poll_records": MAX_RECORDS,
        }

    async def _started(self) -> Any:
        if self._consumer is not None:
            return self._consumer
        loop = asyncio.get_running_loop()
        if loop.time() < self._not_before:
            raise KafkaSourceFailed(f"{self.name}: not started (waiting to try again)")
        from aiokafka import AIOKafkaConsumer

        install_guard()
        register_client(self.client_id, self._policy)
        consumer = AIOKafkaConsumer(*self.topics, **self.consumer_options())
        try:
            async with asyncio.timeout(START_TIMEOUT_S):
                await consumer.start()
        except Exception as error:
            await consumer.stop()
            refused = refusal_of(self.client_id)
            delay = backoff_s(self._failed_starts, base_s=RESTART_BASE_S, cap_s=RESTART_CAP_S)
            self._failed_starts += 1
            self._not_before = loop.time() + delay
            count("connect", "refused" if refused else "failed")
            reason = refused or f"{type(error).__name__}: {error}".rstrip(": ")
            raise KafkaSourceFailed(f"{self.name}: {reason}; next try in {delay:.1f}s") from None
        self._failed_starts = 0
        count("connect", "ok")
        self._consumer = consumer
        return consumer

    async def pull(self, _context: PullContext) -> Pulled:
        async with self._lock:
            try:
                consumer = await self._started()
                if self._pending:
                    self._rewind(consumer)
                batches = await consumer.getmany(timeout_ms=WAIT_MS, max_records=MAX_RECORDS)
            except KafkaSourceFailed:
                self.failures += 1
                raise
            except Exception as error:
                self.failures += 1
                count("consume", "failed")
                await self._stop()
                raise KafkaSourceFailed(f"{self.name}: {type(error).__name__}: {error}") from None
        values: list[bytes | None] = []
        first: dict[Any, int] = {}
        last: dict[Any, int] = {}
        for partition, records in batches.items():
            if not records:
                continue
            first[partition] = records[0].offset
            last[partition] = records[-1].offset
            values.extend(record.value for record in records)
        if not values:
            return Pulled([])
        self._pending = first
        events = decode_records(values, self.decoding)
        count("consume", "ok", len(events))
        self.consumed += len(events)

        async def done() -> None:
            await self._commit(consumer, first, last)

        return Pulled(events, done)

    def _rewind(self, consumer: Any) -> None:
        """The previous batch was not delivered: read it again."""
        assigned = consumer.assignment()
        for partition, offset in self._pending.items():
            if partition in assigned:
                consumer.seek(partition, offset)
        self._pending = {}

    async def _commit(self, consumer: Any, first: dict[Any, int], last: dict[Any, int]) -> None:
        from aiokafka import TopicPartition
        from aiokafka.structs import OffsetAndMetadata

        offsets = {
            TopicPartition(tp.topic, tp.partition): OffsetAndMetadata(offset + 1, "")
            for tp, offset in last.items()
        }
        async with self._lock:
            if self._pending is first:
                self._pending = {}
            if consumer is self._consumer:
                await consumer.commit(offsets)

    async def _stop(self) -> None:
        consumer, self._consumer = self._consumer, None
        self._pending = {}
        if consumer is not None:
            await consumer.stop()

    async def aclose(self) -> None:
        """Leave the group (its partitions go to the other members)."""
        async with self._lock:
            await self._stop()
        forget_client(self.client_id)


async def pull_consumer(runtime: Any, context: PullContext) -> Pulled:
    """The ``pull`` hook of a source whose runtime is a ``ConsumerRuntime``."""
    if not isinstance(runtime, ConsumerRuntime):
        raise KafkaSourceFailed("the node has no running consumer")
    return await runtime.pull(context)

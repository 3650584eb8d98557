"""The ``kafka`` source: records of Kafka topics, as the platform's Terraform provider
writes the node (``internal/provider/models/sources/kafka.go``): ``brokers [{host,
port}]``, ``topics`` (1-256 characters each, distinct), ``group_id`` (the consumer
group), ``tls_enabled`` (default true), ``sasl_enabled`` with ``sasl_username``,
``sasl_password``, ``sasl_mechanism`` (as the ``kafka`` destination), ``decoding_codec``
(``json``, the default, or ``bytes``).

Consumed by ``kafka_consumer.ConsumerRuntime`` (a member of the consumer group per
worker, offsets committed once the pipeline's destinations took the events); brokers
go through the destination guard (``components/kafka_wire.py``).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from tidegate.components.base import BuildContext, Component, NodeRef
from tidegate.components.kafka_wire import Brokers, SaslMechanism, Secret, settings_of, vet_brokers
from tidegate.components.sources.kafka_consumer import ConsumerRuntime, Decoding, pull_consumer
from tidegate.components.sources.pull import PullContext, Pulled
from tidegate.kit.destination_guard import DestinationPolicy

__all__ = ["COMPONENT", "KafkaSourceConfig", "Topics"]


def _distinct(topics: list[str]) -> list[str]:
    if len(set(topics)) != len(topics):
        raise ValueError("topics must be distinct")
    return topics


Topics = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=256)]],
    Field(min_length=1, max_length=100),
    AfterValidator(_distinct),
]


class KafkaSourceConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    brokers: Brokers
    topics: Topics
    group_id: Annotated[str, Field(min_length=1, max_length=256)]
    tls_enabled: bool = True
    sasl_enabled: bool = False
    sasl_username: Secret | None = None
    sasl_password: Secret | None = None
    sasl_mechanism: SaslMechanism | None = None
    decoding_codec: Decoding = "json"

    @model_validator(mode="after")
    def _sasl_complete(self) -> KafkaSourceConfig:
        if self.sasl_enabled and (self.sasl_username is None or self.sasl_password is None):
            raise ValueError("sasl_enabled needs sasl_username and sasl_password")
        return self


def _build(config: KafkaSourceConfig, context: BuildContext, node: NodeRef) -> ConsumerRuntime:
    return ConsumerRuntime(
        settings_of(config),
        topics=config.topics,
        group_id=config.group_id,
        decoding=config.decoding_codec,
        name=f"kafka source {node.node_id} of pipeline {node.pipeline_id}",
        client_id=f"tidegate-{node.node_id}-{node.fingerprint[:12]}",
        policy=context.destination_policy or DestinationPolicy(),
    )


async def _pull(_config: Any, context: PullContext) -> Pulled:
    return await pull_consumer(context.runtime, context)


async def _vet(config: KafkaSourceConfig, policy: DestinationPolicy) -> None:
    await vet_brokers(config.brokers, policy)


COMPONENT: Component[KafkaSourceConfig] = Component(
    kind="source",
    type="kafka",
    config_model=KafkaSourceConfig,
    build=_build,
    describe="Records of Kafka topics, read as a consumer group and committed once "
    "delivered (`brokers`, `topics`, `group_id`, TLS and SASL, `decoding_codec`)",
    pull=_pull,
    vet=_vet,
)

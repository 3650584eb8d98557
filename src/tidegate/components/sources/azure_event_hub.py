"""The ``azure-event-hub`` source: events of Azure Event Hubs, as the platform's
Terraform provider writes the node
(``internal/provider/models/sources/azure_event_hub.go``): ``connection_string`` (a
SAS policy's, 1-512 characters), ``namespace`` (1-256), ``group_id`` (the consumer
group, 1-256), ``topics`` (the event hubs' names, 1-256 characters each),
``decoding_codec`` (``bytes``, the default, or ``json``).

Read through the namespace's **Kafka endpoint** (Event Hubs speaks the Kafka protocol
on port 9093 of ``<namespace>.servicebus.windows.net``, Standard tier and above) with
the same consumer as the ``kafka`` source (``kafka_consumer.py``): TLS, SASL ``PLAIN``
with the user name ``$ConnectionString`` and the connection string as the password, as
Microsoft documents for Kafka clients. The Kafka consumer group keeps its offsets in
the service, so no checkpoint store is needed (the ``azure-eventhub`` SDK's AMQP
consumer would need an Azure Blob container for that). ``namespace`` is the
namespace's name (``.servicebus.windows.net`` is added) or, when it holds a dot, its
host name as given. The host goes through the destination guard.
"""

from __future__ import annotations

from typing import Annotated, Any, Final

from pydantic import BaseModel, ConfigDict, Field

from tidegate.components.base import BuildContext, Component, NodeRef
from tidegate.components.kafka_wire import KafkaClientSettings, vet_host
from tidegate.components.sources.kafka_consumer import ConsumerRuntime, Decoding, pull_consumer
from tidegate.components.sources.pull import PullContext, Pulled
from tidegate.kit.destination_guard import DestinationPolicy

__all__ = ["COMPONENT", "KAFKA_PORT", "AzureEventHubSourceConfig", "event_hubs_settings"]

KAFKA_PORT: Final = 9093
SUFFIX: Final = ".servicebus.windows.net"


Hubs = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=256)]], Field(min_length=1, max_length=100)
]
"""The event hubs (the provider does not ask them to be distinct)."""


class AzureEventHubSourceConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    connection_string: Annotated[str, Field(min_length=1, max_length=512)]
    namespace: Annotated[str, Field(min_length=1, max_length=256)]
    group_id: Annotated[str, Field(min_length=1, max_length=256)]
    topics: Hubs
    decoding_codec: Decoding = "bytes"

    @property
    def host(self) -> str:
        name = self.namespace.strip().rstrip(".")
        return name if "." in name else name + SUFFIX


def event_hubs_settings(config: AzureEventHubSourceConfig) -> KafkaClientSettings:
    """Event Hubs' Kafka endpoint: TLS, SASL PLAIN, ``$ConnectionString``."""
    return KafkaClientSettings(
        brokers=((config.host, KAFKA_PORT),),
        tls=True,
        sasl_mechanism="PLAIN",
        sasl_username="$ConnectionString",
        sasl_password=config.connection_string,
    )


def _build(
    config: AzureEventHubSourceConfig, context: BuildContext, node: NodeRef
) -> ConsumerRuntime:
    return ConsumerRuntime(
        event_hubs_settings(config),
        topics=config.topics,
        group_id=config.group_id,
        decoding=config.decoding_codec,
        name=f"azure-event-hub source {node.node_id} of pipeline {node.pipeline_id}",
        client_id=f"tidegate-{node.node_id}-{node.fingerprint[:12]}",
        policy=context.destination_policy or DestinationPolicy(),
    )


async def _pull(_config: Any, context: PullContext) -> Pulled:
    return await pull_consumer(context.runtime, context)


async def _vet(config: AzureEventHubSourceConfig, policy: DestinationPolicy) -> None:
    await vet_host("/namespace", config.host, KAFKA_PORT, policy)


COMPONENT: Component[AzureEventHubSourceConfig] = Component(
    kind="source",
    type="azure-event-hub",
    config_model=AzureEventHubSourceConfig,
    build=_build,
    describe="Events of Azure Event Hubs, read through the namespace's Kafka endpoint as a "
    "consumer group (`connection_string`, `namespace`, `group_id`, `topics`)",
    pull=_pull,
    vet=_vet,
)

"""The ``azure-blob-storage`` destination: events as block blobs in an Azure Storage
container, through Blob storage's REST API (``tidegate.objectstore.azure``), as the
platform's Terraform provider configures it
(``internal/provider/models/destinations/azure_blob_storage.go``):
``connection_string`` (the account's, with its key or a SAS; ``BlobEndpoint`` for
Azurite or another endpoint), ``container_name``, and the object storage fields it
shares with ``s3`` (``object_storage.py``: ``prefix``, ``encoding``, ``compression``,
``batch_timeout_secs``, ``file_consolidation``, ``ack_enabled``).

Each delivery's events become blobs ``<prefix><received ms>-<uuid>.<ext>``, each one
``Put Blob`` (``x-ms-blob-type: BlockBlob``) signed with the account's Shared Key (or
carrying the SAS), with ``Content-Type`` by encoding and ``Content-Encoding: gzip`` when
compressed. Retries, backoff, the destination guard (the Blob endpoint's host is
checked on save and at every connection) and ``ack_enabled`` as the other outbound
destinations. A missing container is Azure's 404: not retried, the sender is asked to
retry. The connection string is stored as sent and read back, as the provider reads it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import Field, HttpUrl, field_validator

from tidegate.components.base import Component
from tidegate.components.destinations.object_storage import ObjectStorageConfig, objects
from tidegate.components.destinations.outbound import outbound_component
from tidegate.components.destinations.wire import WireRequest
from tidegate.objectstore.azure import AzureTarget, parse_connection_string, put_blob_headers

__all__ = ["COMPONENT", "AzureBlobStorageConfig", "azure_blob_requests"]


class AzureBlobStorageConfig(ObjectStorageConfig):
    connection_string: Annotated[str, Field(min_length=1, max_length=4096)]
    # Azure's container names: 3-63 of lower-case letters, digits and single hyphens.
    container_name: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$")]

    @field_validator("connection_string")
    @classmethod
    def _usable(cls, value: str) -> str:
        parse_connection_string(value)
        return value

    @field_validator("container_name")
    @classmethod
    def _single_hyphens(cls, value: str) -> str:
        if "--" in value:
            raise ValueError("a container name has no consecutive hyphens")
        return value

    @property
    def target(self) -> AzureTarget:
        return parse_connection_string(self.connection_string)


def azure_blob_requests(
    events: Sequence[Any], config: AzureBlobStorageConfig, *, received_ms: int
) -> list[WireRequest]:
    """One ``Put Blob`` per object carrying ``events`` (CPU work: may run in a worker
    thread)."""
    target = config.target
    requests = []
    for stored in objects(events, config, received_ms=received_ms):
        url = target.url(config.container_name, stored.name)
        headers = put_blob_headers(target, url, stored.body, stored.headers)
        requests.append(WireRequest("PUT", url, headers, stored.body))
    return requests


def _encode(
    config: AzureBlobStorageConfig, events: list[Any], received_ms: int, _attempt: int
) -> list[WireRequest]:
    return azure_blob_requests(events, config, received_ms=received_ms)


def _urls(config: AzureBlobStorageConfig) -> list[tuple[str, HttpUrl]]:
    return [("/connection_string", HttpUrl(config.target.endpoint))]


COMPONENT: Component[AzureBlobStorageConfig] = outbound_component(
    type_="azure-blob-storage",
    config_model=AzureBlobStorageConfig,
    encode=_encode,
    urls=_urls,
    describe="objects (block blobs) in an Azure Storage container, one per delivery",
)

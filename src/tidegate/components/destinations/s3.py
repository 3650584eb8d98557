"""The ``s3`` destination: events as objects in an S3 bucket, through the S3 API
(``tidegate.objectstore.s3``, the writer archiving uses), as the platform's Terraform
provider configures it (``internal/provider/models/destinations/s3.go``).

Each delivery's events become objects (``object_storage.py``, shared with
``azure-blob-storage``), each ``PUT`` to ``<prefix><received ms>-<uuid>.<ext>``,
signed with the node's ``auth`` for its ``region`` (SigV4); the endpoint is AWS's for the region, or the operator's
``TIDEGATE_S3_ENDPOINT`` (an S3-compatible store). Retries, backoff, the destination
guard and ``ack_enabled`` as the other outbound destinations (``outbound.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Annotated, Any

from pydantic import Field

from tidegate.components.base import BuildContext, Component
from tidegate.components.destinations.object_storage import (
    MAX_OBJECT_BYTES,
    ObjectStorageConfig,
    Strict,
    objects,
)
from tidegate.components.destinations.outbound import Encoder, outbound_component
from tidegate.components.destinations.wire import WireRequest
from tidegate.objectstore.s3 import S3Target, aws_endpoint, signed_headers

__all__ = ["COMPONENT", "MAX_OBJECT_BYTES", "S3DestinationConfig", "s3_requests"]


class S3Auth(Strict):
    access_key_id: Annotated[str, Field(min_length=1, max_length=256)]
    secret_access_key: Annotated[str, Field(min_length=1, max_length=1024)]


class S3DestinationConfig(ObjectStorageConfig):
    auth: S3Auth
    region: Annotated[str, Field(pattern=r"^[a-z0-9-]{1,64}$")]
    bucket: Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]{1,255}$")]


def s3_requests(
    events: Sequence[Any], config: S3DestinationConfig, *, received_ms: int, endpoint: str
) -> list[WireRequest]:
    """One signed ``PUT`` per object carrying ``events`` (CPU work: may run in a worker
    thread)."""
    target = S3Target(
        endpoint or aws_endpoint(config.region),
        config.bucket,
        config.region,
        config.auth.access_key_id,
        config.auth.secret_access_key,
    )
    requests = []
    for stored in objects(events, config, received_ms=received_ms):
        url = target.url(stored.name)
        headers = signed_headers(target, "PUT", url, stored.body, stored.headers)
        requests.append(WireRequest("PUT", url, headers, stored.body))
    return requests


def _encode(
    config: S3DestinationConfig,
    events: list[Any],
    received_ms: int,
    _attempt: int,
    *,
    endpoint: str,
) -> list[WireRequest]:
    return s3_requests(events, config, received_ms=received_ms, endpoint=endpoint)


def _bind(
    _encode_default: Encoder[S3DestinationConfig], context: BuildContext
) -> Encoder[S3DestinationConfig]:
    return partial(_encode, endpoint=context.s3_endpoint)


COMPONENT: Component[S3DestinationConfig] = outbound_component(
    type_="s3",
    config_model=S3DestinationConfig,
    encode=partial(_encode, endpoint=""),
    urls=lambda _config: [],
    describe="objects in an S3 bucket (AWS S3 or an S3-compatible store), one per delivery",
    bind=_bind,
)

"""The ``s3`` destination: events as objects in an S3 bucket, through the S3 API
(``tidegate.objectstore.s3``, the writer archiving uses), as the platform's Terraform
provider configures it (``internal/provider/models/destinations/s3.go``).

Each delivery's events become objects of at most ``MAX_OBJECT_BYTES`` (before
compression), ``PUT`` to ``<prefix><received ms>-<uuid>.<ext>`` (``prefix`` "/", the
provider's default, is the bucket's root): ``encoding`` ``text`` (each event's
``message``, else ``line``, else its JSON, one per line; ``.log``), ``ndjson``
(``.ndjson``) or ``json`` (one array; ``.json``), with ``compression: gzip`` gzipped
(``.gz`` added, ``Content-Encoding: gzip``). Signed with the node's ``auth`` for its
``region`` (SigV4); the endpoint is AWS's for the region, or the operator's
``TIDEGATE_S3_ENDPOINT`` (an S3-compatible store). Retries, backoff, the destination
guard and ``ack_enabled`` as the other outbound destinations (``outbound.py``).

Accepted as the provider sends them and not used: ``batch_timeout_secs`` (events are
written per delivery, never held back) and ``file_consolidation`` when not enabled
(enabled is refused: tidegate does not merge objects).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from functools import partial
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tidegate.components.base import BuildContext, Component
from tidegate.components.destinations.http import CONTENT_TYPES, encode_batches
from tidegate.components.destinations.outbound import Encoder, outbound_component
from tidegate.components.destinations.wire import MAX_BODY_BYTES, WireRequest, compress
from tidegate.objectstore.s3 import S3Target, aws_endpoint, signed_headers

__all__ = ["COMPONENT", "S3DestinationConfig", "s3_requests"]

MAX_OBJECT_BYTES: Final = MAX_BODY_BYTES
_EXTENSIONS: Final = {"json": "json", "ndjson": "ndjson", "text": "log"}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class S3Auth(_Strict):
    access_key_id: Annotated[str, Field(min_length=1, max_length=256)]
    secret_access_key: Annotated[str, Field(min_length=1, max_length=1024)]


class FileConsolidation(_Strict):
    enabled: bool = False
    process_every_seconds: int | None = None
    requested_size_bytes: int | None = None
    base_path: Annotated[str, Field(max_length=512)] | None = None

    @model_validator(mode="after")
    def _not_enabled(self) -> FileConsolidation:
        if self.enabled:
            raise ValueError("file consolidation is not supported by this server")
        return self


class S3DestinationConfig(_Strict):
    ack_enabled: bool = True
    batch_timeout_secs: Annotated[int, Field(strict=True, ge=1, le=86_400)] = 300
    auth: S3Auth
    region: Annotated[str, Field(pattern=r"^[a-z0-9-]{1,64}$")]
    bucket: Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]{1,255}$")]
    prefix: Annotated[str, Field(min_length=1, max_length=512, pattern=r"^[^\x00-\x1f\x7f]*$")] = (
        "/"
    )
    encoding: Literal["json", "ndjson", "text"] = "text"
    compression: Literal["gzip", "none"] = "none"
    file_consolidation: FileConsolidation | None = None

    # What ``encode_batches`` reads (the http destination's batching).
    @property
    def payload_prefix(self) -> str:
        return ""

    @property
    def payload_suffix(self) -> str:
        return ""

    @property
    def batch_events(self) -> int:
        return 1_000_000

    @property
    def batch_bytes(self) -> int:
        return MAX_OBJECT_BYTES


def object_name(config: S3DestinationConfig, received_ms: int) -> str:
    extension = _EXTENSIONS[config.encoding] + (".gz" if config.compression == "gzip" else "")
    return f"{config.prefix.lstrip('/')}{received_ms}-{uuid.uuid4().hex}.{extension}"


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
    for body in encode_batches(events, config):
        sent, extra = compress(body, config.compression)
        url = target.url(object_name(config, received_ms))
        headers = signed_headers(
            target, "PUT", url, sent, [("Content-Type", CONTENT_TYPES[config.encoding]), *extra]
        )
        requests.append(WireRequest("PUT", url, headers, sent))
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

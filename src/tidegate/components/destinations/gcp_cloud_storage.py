"""The ``gcp-cloud-storage`` destination: events as objects in a Google Cloud Storage
bucket, as the platform's Terraform provider configures it
(``internal/provider/models/destinations/gcp_cloud_storage.go``): ``bucket``,
``bucket_prefix`` (sent only when set), ``encoding`` (``text``, the default, or
``json``), ``compression`` (``none``, the default, or ``gzip``), ``batch_timeout_secs``,
``credentials_json`` (a service account key: ``gcp.py``), ``ack_enabled``.

Each delivery's events become objects as the other object storage destinations make
them (``object_storage.py``: at most 10 MiB before compression, named ``<bucket_prefix>
<received ms>-<uuid>.<log|json>[.gz]``; ``text`` each event's ``message``, else
``line``, else its JSON, one per line; ``json`` one array). The wire is the JSON API's
multipart upload (https://cloud.google.com/storage/docs/uploading-objects, "multipart
upload"): ``POST https://storage.googleapis.com/upload/storage/v1/b/<bucket>/o?
uploadType=multipart``, ``Authorization: Bearer <token>`` (scope
``https://www.googleapis.com/auth/devstorage.read_write``), ``Content-Type:
multipart/related; boundary=<b>``, a metadata part ``{"name", "contentType",
"contentEncoding"?}`` (``application/json; charset=UTF-8``) then the object's bytes
(with its ``Content-Type``). Storage answers 200 with the object's resource. Retries,
backoff, the destination guard and ``ack_enabled`` as the other outbound destinations;
a missing bucket is Storage's 404: not retried, the sender is asked to retry.
``TIDEGATE_DESTINATION_ENDPOINTS`` (``gcp-cloud-storage=...``) sends elsewhere.
``batch_timeout_secs`` is accepted and not used, as for ``s3``: events are written per
delivery, never held back.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Annotated, Any, Final, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

from tidegate.components.base import Component
from tidegate.components.destinations.gcp import Credentials, authorizer, token_urls
from tidegate.components.destinations.object_storage import (
    ObjectStorageConfig,
    StoredObject,
    objects,
)
from tidegate.components.destinations.vendor import vendor_component
from tidegate.components.destinations.wire import WireRequest

__all__ = ["COMPONENT", "SCOPE", "GcpCloudStorageConfig", "gcs_requests", "multipart"]

SCOPE: Final = "https://www.googleapis.com/auth/devstorage.read_write"


class GcpCloudStorageConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    ack_enabled: bool = True
    batch_timeout_secs: Annotated[int, Field(strict=True, ge=1, le=86_400)] = 300
    encoding: Literal["json", "text"] = "text"
    # Storage's bucket names: 3-63 characters (222 with dots) of lower-case letters,
    # digits, dashes, underscores and dots, starting and ending with a letter or digit.
    bucket: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$")]
    compression: Literal["gzip", "none"] = "none"
    bucket_prefix: (
        Annotated[str, Field(min_length=1, max_length=512, pattern=r"^[^\x00-\x1f\x7f]*$")] | None
    ) = None
    credentials_json: Credentials

    @property
    def storage(self) -> ObjectStorageConfig:
        return ObjectStorageConfig(
            prefix=self.bucket_prefix or "/", encoding=self.encoding, compression=self.compression
        )


def multipart(stored: StoredObject, boundary: str) -> tuple[str, bytes]:
    """The ``Content-Type`` and body of the multipart upload of ``stored``."""
    metadata: dict[str, str] = {"name": stored.name}
    for name, value in stored.headers:
        metadata["contentType" if name == "Content-Type" else "contentEncoding"] = value
    mark = b"--" + boundary.encode()
    content_type = dict(stored.headers)["Content-Type"]
    body = b"".join(
        (
            mark + b"\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n",
            orjson.dumps(metadata),
            b"\r\n" + mark + b"\r\nContent-Type: " + content_type.encode() + b"\r\n\r\n",
            stored.body,
            b"\r\n" + mark + b"--\r\n",
        )
    )
    return f"multipart/related; boundary={boundary}", body


def _boundary(data: bytes) -> str:
    while True:
        boundary = f"tidegate-{uuid.uuid4().hex}"
        if boundary.encode() not in data:
            return boundary


def gcs_requests(
    events: Sequence[Any], config: GcpCloudStorageConfig, *, received_ms: int, base: str
) -> list[WireRequest]:
    """One multipart upload per object carrying ``events`` (CPU work: may run in a
    worker thread); the token is added per delivery."""
    url = f"{base}/upload/storage/v1/b/{config.bucket}/o?uploadType=multipart"
    requests = []
    for stored in objects(events, config.storage, received_ms=received_ms):
        content_type, body = multipart(stored, _boundary(stored.body))
        requests.append(WireRequest("POST", url, (("Content-Type", content_type),), body))
    return requests


def _encode(
    config: GcpCloudStorageConfig, events: list[Any], received_ms: int, base: str
) -> list[WireRequest]:
    return gcs_requests(events, config, received_ms=received_ms, base=base)


COMPONENT: Component[GcpCloudStorageConfig] = vendor_component(
    type_="gcp-cloud-storage",
    config_model=GcpCloudStorageConfig,
    encode=_encode,
    base_url=lambda _config: "https://storage.googleapis.com",
    describe="Objects in a Google Cloud Storage bucket (JSON API multipart upload), one per "
    "delivery, with a service account's token",
    urls=lambda config: token_urls(config.credentials_json),
    authorizer=authorizer(SCOPE),
)

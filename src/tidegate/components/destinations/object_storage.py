"""What the object storage destinations (``s3``, ``azure-blob-storage``) share, as the
platform's Terraform provider configures them: ``ack_enabled``, ``batch_timeout_secs``,
``prefix``, ``encoding``, ``compression`` and ``file_consolidation``; and how one
delivery's events become objects.

Each delivery's events become objects of at most ``MAX_OBJECT_BYTES`` before
compression, named ``<prefix><received ms>-<uuid>.<ext>`` (a leading ``/`` of the
prefix dropped: ``/``, the s3 default, is the root): ``encoding`` ``text`` (each event's
``message``, else ``line``, else its JSON, one per line; ``.log``), ``ndjson``
(``.ndjson``) or ``json`` (one array; ``.json``), with ``compression: gzip`` gzipped
(``.gz`` added, ``Content-Encoding: gzip``). **Decisions:** ``batch_timeout_secs`` is
accepted and not used (events are written per delivery, never held back, so an
acknowledged event is stored); ``file_consolidation`` is accepted when not enabled
(enabled is refused: tidegate does not merge objects).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tidegate.components.destinations.http import CONTENT_TYPES, encode_batches
from tidegate.components.destinations.wire import MAX_BODY_BYTES, compress

__all__ = [
    "MAX_OBJECT_BYTES",
    "FileConsolidation",
    "ObjectStorageConfig",
    "StoredObject",
    "Strict",
    "objects",
]

MAX_OBJECT_BYTES: Final = MAX_BODY_BYTES
_EXTENSIONS: Final = {"json": "json", "ndjson": "ndjson", "text": "log"}


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FileConsolidation(Strict):
    enabled: bool = False
    process_every_seconds: int | None = None
    requested_size_bytes: int | None = None
    base_path: Annotated[str, Field(max_length=512)] | None = None

    @model_validator(mode="after")
    def _not_enabled(self) -> FileConsolidation:
        if self.enabled:
            raise ValueError("file consolidation is not supported by this server")
        return self


class ObjectStorageConfig(Strict):
    ack_enabled: bool = True
    batch_timeout_secs: Annotated[int, Field(strict=True, ge=1, le=86_400)] = 300
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


@dataclass(frozen=True, slots=True)
class StoredObject:
    name: str
    body: bytes
    """As stored (compressed when asked)."""
    headers: tuple[tuple[str, str], ...]
    """``Content-Type``, and ``Content-Encoding`` when compressed."""


def object_name(config: ObjectStorageConfig, received_ms: int) -> str:
    extension = _EXTENSIONS[config.encoding] + (".gz" if config.compression == "gzip" else "")
    return f"{config.prefix.lstrip('/')}{received_ms}-{uuid.uuid4().hex}.{extension}"


def objects(
    events: Sequence[Any], config: ObjectStorageConfig, *, received_ms: int
) -> Iterator[StoredObject]:
    """The objects carrying ``events`` (CPU work: may run in a worker thread)."""
    for body in encode_batches(events, config):
        sent, extra = compress(body, config.compression)
        headers = (("Content-Type", CONTENT_TYPES[config.encoding]), *extra)
        yield StoredObject(object_name(config, received_ms), sent, headers)

"""The ``gcp-cloud-pubsub`` destination: events published to a Google Cloud Pub/Sub
topic, as the platform's Terraform provider configures it
(``internal/provider/models/destinations/gcp_cloud_pubsub.go``): ``project_id``,
``topic``, ``encoding`` (``text``, the default, or ``json``), ``credentials_json`` (a
service account key: ``gcp.py``), ``ack_enabled``.

The wire (https://cloud.google.com/pubsub/docs/reference/rest/v1/projects.topics/publish):
``POST https://pubsub.googleapis.com/v1/projects/<project_id>/topics/<topic>:publish``,
``Authorization: Bearer <token>`` (scope ``https://www.googleapis.com/auth/pubsub``),
``Content-Type: application/json``, ``{"messages": [{"data": "<base64>"}, ...]}``: one
message per event, its data the event's JSON (``json``) or its ``message``, else
``line``, else its JSON (``text``). At most 1,000 messages and 10,000,000 bytes per
request (the API's limits); Pub/Sub answers 200 ``{"messageIds": [...]}``. Retries,
backoff, the destination guard and ``ack_enabled`` as the other outbound destinations;
the operator may send to another endpoint (the Pub/Sub emulator, a regional endpoint:
``TIDEGATE_DESTINATION_ENDPOINTS``, ``gcp-cloud-pubsub=...``).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Sequence
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from tidegate.components.base import Component
from tidegate.components.destinations.gcp import Credentials, ProjectId, authorizer, token_urls
from tidegate.components.destinations.http import encode_event
from tidegate.components.destinations.vendor import json_arrays, vendor_component
from tidegate.components.destinations.wire import WireRequest

__all__ = ["COMPONENT", "SCOPE", "GcpCloudPubSubConfig", "pubsub_requests"]

SCOPE: Final = "https://www.googleapis.com/auth/pubsub"
MAX_BYTES: Final = 10_000_000
MAX_ITEMS: Final = 1_000
_BEFORE: Final = b'{"messages":'
_AFTER: Final = b"}"


class GcpCloudPubSubConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    ack_enabled: bool = True
    encoding: Literal["json", "text"] = "text"
    project_id: ProjectId
    topic: Annotated[str, Field(min_length=1, max_length=255, pattern=r"^[A-Za-z0-9._~+%-]+$")]
    credentials_json: Credentials


def _messages(events: Sequence[Any], encoding: str) -> Iterator[bytes]:
    for event in events:
        data = base64.b64encode(encode_event(event, encoding))
        yield b'{"data":"' + data + b'"}'


def pubsub_requests(
    events: Sequence[Any], config: GcpCloudPubSubConfig, *, base: str
) -> list[WireRequest]:
    """The requests carrying ``events`` (CPU work: may run in a worker thread); the
    token is added per delivery."""
    url = f"{base}/v1/projects/{config.project_id}/topics/{config.topic}:publish"
    headers = (("Content-Type", "application/json"),)
    room = MAX_BYTES - len(_BEFORE) - len(_AFTER)
    return [
        WireRequest("POST", url, headers, _BEFORE + array + _AFTER)
        for array in json_arrays(
            _messages(events, config.encoding), max_bytes=room, max_items=MAX_ITEMS
        )
    ]


def _encode(
    config: GcpCloudPubSubConfig, events: list[Any], _received_ms: int, base: str
) -> list[WireRequest]:
    return pubsub_requests(events, config, base=base)


COMPONENT: Component[GcpCloudPubSubConfig] = vendor_component(
    type_="gcp-cloud-pubsub",
    config_model=GcpCloudPubSubConfig,
    encode=_encode,
    base_url=lambda _config: "https://pubsub.googleapis.com",
    describe="Events published to a Google Cloud Pub/Sub topic (`topics/<topic>:publish`), "
    "with a service account's token, retried with backoff",
    urls=lambda config: token_urls(config.credentials_json),
    authorizer=authorizer(SCOPE),
)

"""The ``gcp-cloud-operations`` destination: events as log entries in Google Cloud
Logging (Cloud Operations), as the platform's Terraform provider configures it
(``internal/provider/models/destinations/gcp_cloud_operations.go``): ``project_id``,
``log_id``, ``resource_type``, ``resource_labels`` (a list of ``{label_name,
label_value}``, as the provider turns its map into), ``credentials_json`` (a service
account key: ``gcp.py``), ``ack_enabled``.

The wire (https://cloud.google.com/logging/docs/reference/v2/rest/v2/entries/write):
``POST https://logging.googleapis.com/v2/entries:write``, ``Authorization: Bearer
<token>`` (scope ``https://www.googleapis.com/auth/logging.write``), ``Content-Type:
application/json``, ``{"logName": "projects/<project_id>/logs/<log_id, URL-encoded>",
"resource": {"type": <resource_type>, "labels": {...}}, "entries": [...]}``. Each event
is one entry: ``jsonPayload`` the event (an event that is not an object:
``textPayload``, its JSON), ``timestamp`` (RFC 3339) from the event's ``timestamp`` by
the one timestamp rule (left out without one: Logging stamps the time it received the
entry), ``severity`` when the event's ``severity``, else ``level``, names one of
Logging's (``DEFAULT``, ``DEBUG``, ``INFO``, ``NOTICE``, ``WARNING``, ``ERROR``,
``CRITICAL``, ``ALERT``, ``EMERGENCY``, any case; ``warn`` is ``WARNING``). At most
1,000 entries and 5,000,000 bytes per request. Logging answers 200 ``{}``; one entry it
refuses (over 256 KB) refuses the request (a 400: not retried, the sender is asked to
retry). Retries, backoff, the destination guard and ``ack_enabled`` as the other
outbound destinations; ``TIDEGATE_DESTINATION_ENDPOINTS`` (``gcp-cloud-operations=...``)
sends elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Annotated, Any, Final
from urllib.parse import quote

import orjson
from pydantic import BaseModel, ConfigDict, Field

from tidegate.components.base import Component
from tidegate.components.destinations.gcp import (
    Credentials,
    ProjectId,
    ResourceLabels,
    ResourceType,
    authorizer,
    monitored_resource,
    token_urls,
)
from tidegate.components.destinations.vendor import json_arrays, vendor_component
from tidegate.components.destinations.wire import WireRequest
from tidegate.logs.timestamps import epoch_ms, rfc3339_ms

__all__ = [
    "COMPONENT",
    "SCOPE",
    "GcpCloudOperationsConfig",
    "logging_requests",
]

SCOPE: Final = "https://www.googleapis.com/auth/logging.write"
MAX_BYTES: Final = 5_000_000
MAX_ITEMS: Final = 1_000
_SEVERITIES: Final = frozenset(
    {"DEFAULT", "DEBUG", "INFO", "NOTICE", "WARNING", "ERROR", "CRITICAL", "ALERT", "EMERGENCY"}
)
_TEXT: Final = r"^[^\x00-\x1f\x7f]+$"


class GcpCloudOperationsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    ack_enabled: bool = True
    credentials_json: Credentials
    project_id: ProjectId
    log_id: Annotated[str, Field(min_length=1, max_length=512, pattern=_TEXT)]
    resource_type: ResourceType
    resource_labels: ResourceLabels | None = None


def _severity(event: dict[str, Any]) -> str | None:
    for name in ("severity", "level"):
        value = event.get(name)
        if isinstance(value, str):
            upper = value.strip().upper()
            upper = "WARNING" if upper == "WARN" else upper
            if upper in _SEVERITIES:
                return upper
    return None


def _entries(events: Sequence[Any]) -> Iterator[bytes]:
    for event in events:
        if not isinstance(event, dict):
            yield orjson.dumps({"textPayload": orjson.dumps(event).decode()})
            continue
        entry: dict[str, Any] = {"jsonPayload": event}
        millis = epoch_ms(event.get("timestamp"))
        if millis is not None:
            entry["timestamp"] = rfc3339_ms(millis)
        severity = _severity(event)
        if severity is not None:
            entry["severity"] = severity
        yield orjson.dumps(entry)


def logging_requests(
    events: Sequence[Any], config: GcpCloudOperationsConfig, *, base: str
) -> list[WireRequest]:
    """The requests carrying ``events`` (CPU work: may run in a worker thread); the
    token is added per delivery."""
    log_name = f"projects/{config.project_id}/logs/{quote(config.log_id, safe='')}"
    before = orjson.dumps(
        {
            "logName": log_name,
            "resource": monitored_resource(config.resource_type, config.resource_labels),
        }
    )[:-1]
    before += b',"entries":'
    room = MAX_BYTES - len(before) - 1
    headers = (("Content-Type", "application/json"),)
    return [
        WireRequest("POST", f"{base}/v2/entries:write", headers, before + array + b"}")
        for array in json_arrays(_entries(events), max_bytes=room, max_items=MAX_ITEMS)
    ]


def _encode(
    config: GcpCloudOperationsConfig, events: list[Any], _received_ms: int, base: str
) -> list[WireRequest]:
    return logging_requests(events, config, base=base)


COMPONENT: Component[GcpCloudOperationsConfig] = vendor_component(
    type_="gcp-cloud-operations",
    config_model=GcpCloudOperationsConfig,
    encode=_encode,
    base_url=lambda _config: "https://logging.googleapis.com",
    describe="Events as log entries in Google Cloud Logging (`entries:write`), with a "
    "service account's token, retried with backoff",
    urls=lambda config: token_urls(config.credentials_json),
    authorizer=authorizer(SCOPE),
)

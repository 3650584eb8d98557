"""The ``datadog-logs`` destination: events to Datadog's Logs API, as the platform's
Terraform provider configures it (``internal/provider/models/destinations/
datadog_logs.go``): ``api_key``, ``site`` (``us1``, ``us3``, ``us5``, ``eu1``; also
``ap1``), ``compression`` (``none`` or ``gzip``), ``ack_enabled``.

The wire (https://docs.datadoghq.com/api/latest/logs/#send-logs): ``POST
https://http-intake.logs.<site's domain>/api/v2/logs``, ``DD-API-KEY: <api_key>``,
``Content-Type: application/json``, a JSON array of log objects (at most 1,000 and
5,000,000 bytes before compression per request; ``Content-Encoding: gzip`` when
compressed); Datadog answers 202. Each event is sent as it is (Datadog reads its
``message``, ``status``, ``service``, ``ddsource``, ``ddtags``, ``hostname`` and
``timestamp`` and keeps the rest as attributes); an event that is not an object is sent
as ``{"message": <it>}``. Retries, backoff, the destination guard and ``ack_enabled``
as the other outbound destinations; the operator may send to another endpoint
(``TIDEGATE_DESTINATION_ENDPOINTS``, ``vendor.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Final, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, model_validator

from tidegate.components.base import Component
from tidegate.components.destinations.vendor import json_arrays, vendor_component
from tidegate.components.destinations.wire import WireRequest, check_header, compress

__all__ = ["COMPONENT", "SITES", "DatadogLogsConfig", "datadog_requests"]

SITES: Final = {
    "us1": "datadoghq.com",
    "us3": "us3.datadoghq.com",
    "us5": "us5.datadoghq.com",
    "eu1": "datadoghq.eu",
    "ap1": "ap1.datadoghq.com",
}
MAX_BYTES: Final = 5_000_000
MAX_ITEMS: Final = 1_000
PATH: Final = "/api/v2/logs"


class DatadogLogsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    api_key: Annotated[str, Field(min_length=1, max_length=256)]
    site: Literal["us1", "us3", "us5", "eu1", "ap1"]
    compression: Literal["none", "gzip"] = "none"
    ack_enabled: bool = True

    @model_validator(mode="after")
    def _key_fits_a_header(self) -> DatadogLogsConfig:
        check_header("DD-API-KEY", self.api_key)
        return self


def _item(event: Any) -> bytes:
    return orjson.dumps(event if isinstance(event, dict) else {"message": event})


def datadog_requests(
    events: Sequence[Any], config: DatadogLogsConfig, *, base: str
) -> list[WireRequest]:
    """The requests carrying ``events`` (CPU work: may run in a worker thread)."""
    headers = (("Content-Type", "application/json"), ("DD-API-KEY", config.api_key))
    requests = []
    for body in json_arrays(map(_item, events), max_bytes=MAX_BYTES, max_items=MAX_ITEMS):
        sent, extra = compress(body, config.compression)
        requests.append(WireRequest("POST", base + PATH, (*headers, *extra), sent))
    return requests


def _encode(
    config: DatadogLogsConfig, events: list[Any], _received_ms: int, base: str
) -> list[WireRequest]:
    return datadog_requests(events, config, base=base)


COMPONENT: Component[DatadogLogsConfig] = vendor_component(
    type_="datadog-logs",
    config_model=DatadogLogsConfig,
    encode=_encode,
    base_url=lambda config: f"https://http-intake.logs.{SITES[config.site]}",
    describe="Events to Datadog's Logs API (`/api/v2/logs`), batched, retried with backoff",
)

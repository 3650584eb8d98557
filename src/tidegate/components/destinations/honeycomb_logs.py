"""The ``honeycomb-logs`` destination: events to Honeycomb's Batch API, as the
platform's Terraform provider configures it (``internal/provider/models/destinations/
honeycomb_logs.go``): ``api_key``, ``dataset``, ``ack_enabled``.

The wire (https://docs.honeycomb.io/api/tag/Events#operation/createEvents): ``POST
https://api.honeycomb.io/1/batch/<dataset, URL-encoded>`` (a dataset holding ``/`` is
refused on save: the API takes no URL-encoded slash in a name), ``X-Honeycomb-Team:
<api_key>``, ``Content-Type: application/json``, gzip (``Content-Encoding: gzip``), a
JSON array of ``{"data": <event>, "time": "<RFC 3339>"}`` (``time`` from the event's
``timestamp`` by the one timestamp rule, left out without one; an event that is not an
object is ``{"message": <it>}``), at most 1,000 events and 5,000,000 bytes before
compression per request. Honeycomb answers 200 with one ``{"status"}`` per event: an
answer holding a 429 or 5xx status for an event counts as a failure and the batch is
retried (at-least-once); other per-event refusals (a 400 for one malformed event) are
not retried. Retries, backoff, the destination guard and ``ack_enabled`` as the other
outbound destinations; the operator may send to another endpoint (an EU team's
``https://api.eu1.honeycomb.io``: ``TIDEGATE_DESTINATION_ENDPOINTS``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Annotated, Any, Final
from urllib.parse import quote

import orjson
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tidegate.components.base import Component
from tidegate.components.destinations.vendor import json_arrays, vendor_component
from tidegate.components.destinations.wire import WireRequest, check_header, compress
from tidegate.logs.timestamps import epoch_ms, rfc3339_ms

__all__ = ["COMPONENT", "HoneycombLogsConfig", "honeycomb_requests"]

MAX_BYTES: Final = 5_000_000
MAX_ITEMS: Final = 1_000
_RETRIED: Final = re.compile(rb'"status"\s*:\s*(429|5\d\d)\b')


class HoneycombLogsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    api_key: Annotated[str, Field(min_length=1, max_length=256)]
    dataset: Annotated[str, Field(min_length=1, max_length=256, pattern=r"^[^\x00-\x1f\x7f]+$")]
    ack_enabled: bool = True

    @field_validator("dataset")
    @classmethod
    def _no_slash(cls, dataset: str) -> str:
        # Honeycomb: names "may contain URL-encoded spaces or other special characters,
        # but not URL-encoded slashes" (the Events API).
        if "/" in dataset:
            raise ValueError("a Honeycomb dataset name cannot hold a slash (/)")
        return dataset

    @model_validator(mode="after")
    def _key_fits_a_header(self) -> HoneycombLogsConfig:
        check_header("X-Honeycomb-Team", self.api_key)
        return self


def _items(events: Sequence[Any]) -> Iterator[bytes]:
    for event in events:
        data = event if isinstance(event, dict) else {"message": event}
        item: dict[str, Any] = {"data": data}
        millis = epoch_ms(data.get("timestamp"))
        if millis is not None:
            item["time"] = rfc3339_ms(millis)
        yield orjson.dumps(item)


def honeycomb_requests(
    events: Sequence[Any], config: HoneycombLogsConfig, *, base: str
) -> list[WireRequest]:
    """The requests carrying ``events`` (CPU work: may run in a worker thread)."""
    url = f"{base}/1/batch/{quote(config.dataset, safe='')}"
    headers = (("Content-Type", "application/json"), ("X-Honeycomb-Team", config.api_key))
    requests = []
    for body in json_arrays(_items(events), max_bytes=MAX_BYTES, max_items=MAX_ITEMS):
        sent, extra = compress(body, "gzip")
        requests.append(WireRequest("POST", url, (*headers, *extra), sent))
    return requests


def _encode(
    config: HoneycombLogsConfig, events: list[Any], _received_ms: int, base: str
) -> list[WireRequest]:
    return honeycomb_requests(events, config, base=base)


def _accepted(head: bytes) -> bool:
    return _RETRIED.search(head) is None


COMPONENT: Component[HoneycombLogsConfig] = vendor_component(
    type_="honeycomb-logs",
    config_model=HoneycombLogsConfig,
    encode=_encode,
    base_url=lambda _config: "https://api.honeycomb.io",
    describe="Events to Honeycomb's Batch API (`/1/batch/<dataset>`), gzip, retried with backoff",
    accepted=_accepted,
)

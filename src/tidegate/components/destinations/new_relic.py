"""The ``new-relic`` destination: events to New Relic's Log API or metric events to its
Metric API, as the platform's Terraform provider configures it
(``internal/provider/models/destinations/new_relic.go``): ``api`` (``logs``, the
default, or ``metrics``), ``account_id``, ``license_key``, ``ack_enabled``.

The wire, gzip always (``Content-Encoding: gzip``), ``Content-Type: application/json``,
at most 1,000,000 bytes before compression per request (New Relic's limit is 1 MB
compressed), retried, backed off and guarded like the other outbound destinations:

* ``logs`` (https://docs.newrelic.com/docs/logs/log-api/introduction-log-api/):
  ``POST https://log-api.newrelic.com/log/v1``, ``X-License-Key: <license_key>``, body
  ``[{"logs": [{"message", "timestamp"?, "attributes"}]}]``: ``message`` is the event's
  ``message``, else its ``line``, else its JSON; ``timestamp`` (epoch ms) by the one
  timestamp rule; ``attributes`` the rest of the event;
* ``metrics`` (https://docs.newrelic.com/docs/data-apis/ingest-apis/metric-api/):
  ``POST https://metric-api.newrelic.com/metric/v1``, ``Api-Key: <license_key>``, body
  ``[{"metrics": [{"name", "type", "value", "timestamp", "attributes"}]}]`` from metric
  events (``components/prometheus_wire.py``'s shape): an absolute counter or gauge is a
  ``gauge``; an incremental counter or sum a ``count`` with ``interval.ms`` (the event's
  ``interval_ms``, else 1); a histogram or summary with ``count``, ``sum``, ``min`` and
  ``max`` a ``summary``. Other events are skipped (counted in the log).

**Decisions:** ``account_id`` is accepted, stored and read back, and not used (the Log
and Metric APIs take the license key alone; the account is the key's). The EU region's
hosts, or a proxy, are the operator's ``TIDEGATE_DESTINATION_ENDPOINTS``
(``new-relic=https://log-api.eu.newrelic.com``; the paths are kept).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Annotated, Any, Final, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, model_validator

from tidegate.components.base import Component
from tidegate.components.destinations.vendor import json_arrays, vendor_component
from tidegate.components.destinations.wire import WireRequest, check_header, compress
from tidegate.logs.timestamps import epoch_ms

__all__ = ["COMPONENT", "NewRelicConfig", "new_relic_requests"]

log = logging.getLogger("tidegate.runtime.http")

MAX_BYTES: Final = 1_000_000
MAX_ITEMS: Final = 10_000
_HOSTS: Final = {
    "logs": "https://log-api.newrelic.com",
    "metrics": "https://metric-api.newrelic.com",
}
_PATHS: Final = {"logs": "/log/v1", "metrics": "/metric/v1"}
_KEY_HEADERS: Final = {"logs": "X-License-Key", "metrics": "Api-Key"}
_WRAPPERS: Final = {"logs": (b'[{"logs":', b"}]"), "metrics": (b'[{"metrics":', b"}]")}


class NewRelicConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    api: Literal["logs", "metrics"] = "logs"
    account_id: Annotated[str, Field(min_length=1, max_length=64)]
    license_key: Annotated[str, Field(min_length=1, max_length=256)]
    ack_enabled: bool = True

    @model_validator(mode="after")
    def _key_fits_a_header(self) -> NewRelicConfig:
        check_header(_KEY_HEADERS[self.api], self.license_key)
        return self


def _log_entries(events: Sequence[Any]) -> Iterator[bytes]:
    for event in events:
        data = event if isinstance(event, dict) else {"message": event}
        entry: dict[str, Any] = {}
        text = next(
            (data[name] for name in ("message", "line") if isinstance(data.get(name), str)),
            None,
        )
        entry["message"] = text if text is not None else orjson.dumps(data).decode()
        millis = epoch_ms(data.get("timestamp"))
        if millis is not None:
            entry["timestamp"] = millis
        attributes = {
            key: value
            for key, value in data.items()
            if not (text is not None and key in ("message", "line") and value == text)
            and key != "timestamp"
        }
        if attributes:
            entry["attributes"] = attributes
        yield orjson.dumps(entry)


def _number(value: Any) -> float | int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def _metric(event: Any, received_ms: int) -> dict[str, Any] | None:
    if not isinstance(event, dict) or not isinstance(event.get("name"), str):
        return None
    value = event.get("value")
    if not isinstance(value, dict):
        return None
    name = event["name"]
    if isinstance(event.get("namespace"), str) and event["namespace"]:
        name = f"{event['namespace']}.{name}"
    out: dict[str, Any] = {
        "name": name,
        "timestamp": epoch_ms(event.get("timestamp")) or received_ms,
    }
    tags = event.get("tags")
    if isinstance(tags, dict) and tags:
        out["attributes"] = tags
    type_, inner = value.get("type"), value.get("value")
    if type_ in ("counter", "gauge", "sum") and _number(inner) is not None:
        if event.get("kind") == "incremental" and type_ != "gauge":
            interval = event.get("interval_ms")
            good = isinstance(interval, int) and not isinstance(interval, bool) and interval > 0
            return {**out, "type": "count", "value": inner, "interval.ms": interval if good else 1}
        return {**out, "type": "gauge", "value": inner}
    if type_ in ("histogram", "summary", "exponential_histogram") and isinstance(inner, dict):
        parts = {part: _number(inner.get(part)) for part in ("count", "sum", "min", "max")}
        if all(number is not None for number in parts.values()):
            interval = event.get("interval_ms")
            good = isinstance(interval, int) and not isinstance(interval, bool) and interval > 0
            return {
                **out,
                "type": "summary",
                "value": parts,
                "interval.ms": interval if good else 1,
            }
    return None


def _metric_entries(events: Sequence[Any], received_ms: int) -> Iterator[bytes]:
    skipped = 0
    for event in events:
        metric = _metric(event, received_ms)
        if metric is None:
            skipped += 1
            continue
        yield orjson.dumps(metric)
    if skipped:
        log.info("new-relic metrics: %s events that are not metrics skipped", skipped)


def new_relic_requests(
    events: Sequence[Any], config: NewRelicConfig, *, received_ms: int, base: str
) -> list[WireRequest]:
    """The requests carrying ``events`` (CPU work: may run in a worker thread)."""
    url = base + _PATHS[config.api]
    headers = (("Content-Type", "application/json"), (_KEY_HEADERS[config.api], config.license_key))
    entries = _log_entries(events) if config.api == "logs" else _metric_entries(events, received_ms)
    before, after = _WRAPPERS[config.api]
    room = MAX_BYTES - len(before) - len(after)
    requests = []
    for array in json_arrays(entries, max_bytes=room, max_items=MAX_ITEMS):
        sent, extra = compress(before + array + after, "gzip")
        requests.append(WireRequest("POST", url, (*headers, *extra), sent))
    return requests


def _encode(
    config: NewRelicConfig, events: list[Any], received_ms: int, base: str
) -> list[WireRequest]:
    return new_relic_requests(events, config, received_ms=received_ms, base=base)


COMPONENT: Component[NewRelicConfig] = vendor_component(
    type_="new-relic",
    config_model=NewRelicConfig,
    encode=_encode,
    base_url=lambda config: _HOSTS[config.api],
    describe="Events to New Relic's Log API, or metric events to its Metric API; gzip, "
    "retried with backoff",
)

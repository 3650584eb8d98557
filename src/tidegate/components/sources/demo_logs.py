"""The ``demo-logs`` source: generated events, for trying a pipeline without a sender.

``format``: ``json`` (an object with ``host``, ``app``, ``level``, ``method``,
``status``, ``path``, ``bytes``, ``message``), ``apache_common``, ``apache_error``,
``syslog`` (RFC 5424), ``bsd_syslog`` (RFC 3164), ``nginx`` (the combined log
format), ``financial`` (a trade: ``symbol``, ``side``, ``price``, ``quantity``),
``env_sensor`` (a reading: ``sensor_id``, ``location``, ``temperature_c``,
``humidity``), ``http_metrics`` and ``generic_metrics`` (metric events, as the
``aggregate`` processor emits them: ``{name, kind, value: {type, value}, tags}``) or
``shuffle`` (``lines`` taken in turn); the formats are the platform's Terraform
provider's. Each event is ``{"message": <text>}`` (``json`` puts its fields at the top level
too) with ``timestamp`` set to the time it was made. ``interval_secs`` (0.1 to 3600,
default 1) is the time between two events and ``count`` (optional) the number of
events to make before stopping: the rate is bounded by construction.

The generator is a pure function of (format, sequence number, time, lines): tests and
simulation use it directly.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Final, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, model_validator

from tidegate.components.base import BuildContext, Component, NodeRef

__all__ = ["COMPONENT", "DemoLogsConfig", "demo_event"]

DemoFormat = Literal[
    "json",
    "apache_common",
    "apache_error",
    "syslog",
    "bsd_syslog",
    "nginx",
    "financial",
    "env_sensor",
    "http_metrics",
    "generic_metrics",
    "shuffle",
]

_HOSTS: Final = ("web-1", "web-2", "db-1", "cache-1")
_APPS: Final = ("checkout", "search", "auth", "billing")
_LEVELS: Final = ("info", "info", "info", "warn", "error", "debug")
_METHODS: Final = ("GET", "GET", "POST", "PUT", "DELETE")
_PATHS: Final = ("/", "/cart", "/search?q=boots", "/login", "/api/v1/orders")
_STATUSES: Final = (200, 200, 200, 201, 301, 404, 500, 503)
_MESSAGES: Final = (
    "request served",
    "cache miss",
    "user signed in",
    "payment declined",
    "slow query",
    "connection reset by peer",
)
_SEVERITY: Final = {"debug": 7, "info": 6, "warn": 4, "error": 3}
_SYMBOLS: Final = ("ACME", "GLOBX", "INIT", "UMBR")
_PLACES: Final = ("warehouse", "office", "server-room", "lab")


def _structured(format_: str, number: int, app: str, method: str, status: int) -> dict[str, Any]:
    """The fields of a ``financial``, ``env_sensor`` or metric event."""
    if format_ == "financial":
        return {
            "symbol": _pick(_SYMBOLS, number, 8),
            "side": "buy" if number % 2 == 0 else "sell",
            "price": round(10 + (number * 7919) % 99_000 / 100, 2),
            "quantity": 1 + (number * 104_729) % 500,
        }
    if format_ == "env_sensor":
        return {
            "sensor_id": f"sensor-{number % 16}",
            "location": _pick(_PLACES, number, 9),
            "temperature_c": round(15 + (number * 7919) % 1_500 / 100, 2),
            "humidity": round(30 + (number * 104_729) % 4_000 / 100, 2),
        }
    if format_ == "http_metrics":
        tags = {"method": method, "status": str(status)}
        return {
            "name": "http_requests",
            "kind": "incremental",
            "tags": tags,
            "value": {"type": "counter", "value": 1},
        }
    tags = {"app": app}
    value = {"type": "gauge", "value": (number * 7919) % 1_000}
    return {"name": "queue_depth", "kind": "absolute", "tags": tags, "value": value}


class DemoLogsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    format: DemoFormat = "json"
    interval_secs: Annotated[float, Field(ge=0.1, le=3600)] = 1.0
    count: Annotated[int, Field(strict=True, ge=1, le=1_000_000)] | None = None
    lines: Annotated[list[Annotated[str, Field(max_length=8192)]], Field(max_length=100)] = []

    @model_validator(mode="after")
    def _shuffle_needs_lines(self) -> DemoLogsConfig:
        if self.format == "shuffle" and not self.lines:
            raise ValueError("format shuffle needs lines")
        return self


def _pick(options: tuple[Any, ...], number: int, salt: int) -> Any:
    # A fixed, well-spread walk through the options (no global random state).
    return options[(number * 2_654_435_761 + salt * 40_503) % len(options)]


def demo_event(config: DemoLogsConfig, number: int, now_ms: int) -> dict[str, Any]:
    """Event ``number`` (0, 1, ...) made at ``now_ms``."""
    moment = datetime.fromtimestamp(now_ms / 1000, UTC)
    host, app = _pick(_HOSTS, number, 1), _pick(_APPS, number, 2)
    level, message = _pick(_LEVELS, number, 3), _pick(_MESSAGES, number, 4)
    method, path = _pick(_METHODS, number, 5), _pick(_PATHS, number, 6)
    status, size = _pick(_STATUSES, number, 7), 200 + (number * 7919) % 50_000
    ip = f"10.0.{number % 256}.{(number // 256) % 256}"
    if config.format == "json":
        fields = {
            "host": host,
            "app": app,
            "level": level,
            "method": method,
            "status": status,
            "path": path,
            "bytes": size,
            "message": message,
        }
        return {**fields, "timestamp": now_ms, "message": orjson.dumps(fields).decode()}
    if config.format in ("financial", "env_sensor", "http_metrics", "generic_metrics"):
        fields = _structured(config.format, number, app, method, status)
        return {**fields, "timestamp": now_ms, "message": orjson.dumps(fields).decode()}
    if config.format == "apache_common":
        stamp = moment.strftime("%d/%b/%Y:%H:%M:%S +0000")
        text = f'{ip} - - [{stamp}] "{method} {path} HTTP/1.1" {status} {size}'
    elif config.format == "nginx":
        stamp = moment.strftime("%d/%b/%Y:%H:%M:%S +0000")
        agent = "Mozilla/5.0 (demo)"
        text = f'{ip} - - [{stamp}] "{method} {path} HTTP/1.1" {status} {size} "-" "{agent}"'
    elif config.format == "apache_error":
        stamp = moment.strftime("%a %b %d %H:%M:%S.%f %Y")
        text = f"[{stamp}] [{app}:{level}] [pid {1000 + number % 9000}] [client {ip}] {message}"
    elif config.format == "syslog":
        priority = 8 + _SEVERITY[level]
        stamp = moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        text = f"<{priority}>1 {stamp} {host} {app} {1000 + number % 9000} ID{number} - {message}"
    elif config.format == "bsd_syslog":
        priority = 8 + _SEVERITY[level]
        # RFC 3164: the day of the month padded with a space ("Nov  5"), never the hour.
        stamp = f"{moment:%b} {moment.day:2d} {moment:%H:%M:%S}"
        text = f"<{priority}>{stamp} {host} {app}[{1000 + number % 9000}]: {message}"
    else:  # shuffle
        text = config.lines[number % len(config.lines)]
    return {"message": text, "timestamp": now_ms}


def _build(_config: DemoLogsConfig, _context: BuildContext, _node: NodeRef) -> None:
    return None


COMPONENT: Component[DemoLogsConfig] = Component(
    kind="source",
    type="demo-logs",
    config_model=DemoLogsConfig,
    build=_build,
    describe="Generated events (`format`: json, apache_common, apache_error, syslog, "
    "bsd_syslog, nginx, financial, env_sensor, http_metrics, generic_metrics, shuffle) "
    "every `interval_secs`",
)

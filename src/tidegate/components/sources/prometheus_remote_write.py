"""The ``prometheus-remote-write`` source: Prometheus remote write 1.0 under the source's
gateway route.

``POST /gateway/{gateway_route_id}`` (the route itself; also ``/api/v1/write``, the path
Prometheus's own receiver serves) with a snappy-compressed ``WriteRequest``
(``Content-Encoding: snappy``, ``Content-Type: application/x-protobuf``): what a
Prometheus ``remote_write`` block, or any remote write client, sends. Credential: an
access key of the route, e.g. ``authorization: {type: Token, credentials: <key>}`` in
the ``remote_write`` block. The answer is 200 with an empty body.

Each sample becomes one metric event (``components/prometheus_wire.py``):
``{"name", "kind": "absolute", "value": {"type": "gauge", "value"}, "tags": <labels
without __name__>, "timestamp": <ms>}``, ``type: counter`` when the same request's
metadata says the family is a counter (Prometheus sends metadata in requests of its
own, so samples are gauges unless a client sends both together). Samples that are not
finite (NaN: Prometheus's staleness markers; ±Inf) are skipped. No options (the
platform's Terraform provider sends an empty ``user_config``).
"""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, ConfigDict

from tidegate.components.base import BuildContext, Component, Needs, NodeRef
from tidegate.components.prometheus_wire import series_events
from tidegate.components.sources.push import ROUTE_ITSELF, Push, Received
from tidegate.errors import UnsupportedMediaType
from tidegate.kit.body import media_type

__all__ = ["COMPONENT", "PATHS", "PrometheusRemoteWriteSourceConfig", "receive"]

PATHS: Final = frozenset({ROUTE_ITSELF, "api/v1/write"})
_PROTOBUF: Final = frozenset({"application/x-protobuf", "application/protobuf", ""})


class PrometheusRemoteWriteSourceConfig(BaseModel):
    """No options."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def receive(_config: PrometheusRemoteWriteSourceConfig, push: Push) -> Received:
    if media_type(push.content_type) not in _PROTOBUF:
        raise UnsupportedMediaType("Prometheus remote write takes application/x-protobuf")
    return Received(series_events(push.body), answer=b"", media_type="text/plain")


def _build(
    _config: PrometheusRemoteWriteSourceConfig, _context: BuildContext, _node: NodeRef
) -> None:
    return None


COMPONENT: Component[PrometheusRemoteWriteSourceConfig] = Component(
    kind="source",
    type="prometheus-remote-write",
    config_model=PrometheusRemoteWriteSourceConfig,
    build=_build,
    describe="Prometheus remote write (snappy protobuf) at the gateway route or "
    "`/api/v1/write` under it; each sample a metric event",
    needs=Needs(gateway_route=True),
    receive=receive,
    paths=PATHS,
)

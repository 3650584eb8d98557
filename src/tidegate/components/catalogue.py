"""Every component type tidegate runs: adding one is a module and a line here."""

from __future__ import annotations

from typing import Final

from tidegate.components.destinations import blackhole, mezmo
from tidegate.components.destinations import http as http_destination
from tidegate.components.processors import filter as filter_processor
from tidegate.components.processors import throttle
from tidegate.components.registry import Registry
from tidegate.components.sources import http as http_source

__all__ = ["REGISTRY"]

REGISTRY: Final = Registry(
    [
        http_source.COMPONENT,
        filter_processor.COMPONENT,
        throttle.COMPONENT,
        mezmo.COMPONENT,
        http_destination.COMPONENT,
        blackhole.COMPONENT,
    ]
)

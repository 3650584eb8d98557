"""The ``unroll`` processor: an event whose ``field`` holds an array becomes one event
per element.

With ``values_only`` (the default) each copy holds one element at ``field``; without,
an element that is an object is merged into the copy's root and ``field`` removed
(other elements are set at ``field`` as with ``values_only``). An event whose field is
missing or not an array, or an empty array, passes unchanged. Bounded: at most
``MAX_ELEMENTS`` copies per event and ``MAX_PER_BATCH`` per batch; past those, events
pass whole."""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, ConfigDict

from tidegate.components.base import (
    BuildContext,
    Component,
    Event,
    NodeOutput,
    NodeRef,
    RunContext,
)
from tidegate.components.processors.kit import FieldText, on_batch
from tidegate.processing.fields import FieldPath, with_value, without

__all__ = ["COMPONENT", "MAX_ELEMENTS", "MAX_PER_BATCH", "UnrollConfig"]

MAX_ELEMENTS: Final = 1_000
MAX_PER_BATCH: Final = 100_000


class UnrollConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    field: FieldText
    values_only: bool = True


class UnrollProcessor:
    def __init__(self, config: UnrollConfig) -> None:
        self._path = FieldPath.parse(config.field)
        self._get = self._path.getter()
        self._values_only = config.values_only

    async def run(self, events: list[Event], *, context: RunContext) -> NodeOutput:
        return await on_batch(self._run, events, context)

    def _run(self, events: list[Event]) -> NodeOutput:
        out: list[Event] = []
        budget = MAX_PER_BATCH
        for event in events:
            items = self._get(event)
            if not isinstance(items, list) or not items or len(items) > min(MAX_ELEMENTS, budget):
                out.append(event)
                continue
            budget -= len(items)
            for item in items:
                if not self._values_only and isinstance(item, dict):
                    out.append({**without(event, self._path), **item})
                else:
                    out.append(with_value(event, self._path, item))
        return NodeOutput(out, {}, len(events))


def _build(config: UnrollConfig, _context: BuildContext, _node: NodeRef) -> UnrollProcessor:
    return UnrollProcessor(config)


COMPONENT: Component[UnrollConfig] = Component(
    kind="processor",
    type="unroll",
    config_model=UnrollConfig,
    build=_build,
    describe="One event per element of the array at `field`",
)

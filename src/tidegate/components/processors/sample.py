"""The ``sample`` processor: keeps one event in ``rate`` (every ``rate``-th event,
counted across batches by the running node), and every event matching
``always_include``. The others are discarded. State: one counter."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from tidegate.components.base import BuildContext, Component, Event, NodeRef
from tidegate.components.processors.kit import PerEventProcessor
from tidegate.processing.conditions import Condition

__all__ = ["COMPONENT", "SampleConfig"]


class SampleConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    rate: Annotated[int, Field(strict=True, ge=1, le=1_000_000)] = Field(
        description="Keep 1 event in `rate`"
    )
    always_include: Condition | None = None


class _Sampler:
    def __init__(self, config: SampleConfig) -> None:
        self._rate = config.rate
        self._always = None if config.always_include is None else config.always_include.predicate
        self._seen = 0

    def __call__(self, event: Event) -> Event | None:
        if self._always is not None and self._always(event):
            return event
        keep = self._seen % self._rate == 0
        self._seen = (self._seen + 1) % self._rate
        return event if keep else None


def _build(config: SampleConfig, _context: BuildContext, _node: NodeRef) -> PerEventProcessor:
    return PerEventProcessor(_Sampler(config), name="sample")


COMPONENT: Component[SampleConfig] = Component(
    kind="processor",
    type="sample",
    config_model=SampleConfig,
    build=_build,
    describe="Keeps 1 event in `rate`, and every event matching `always_include`",
)

"""The ``filter`` processor: ``action: allow`` keeps the events matching
``conditional``, ``drop`` discards them and keeps the rest.

``condition`` is the older name of ``conditional`` (accepted on input; the stored
configuration keeps what the client sent). The predicates are pure, so a large batch
is decided in a worker thread (``RunContext.offload``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from tidegate.components.base import (
    BuildContext,
    Component,
    Event,
    NodeOutput,
    NodeRef,
    RunContext,
)
from tidegate.components.processors.kit import on_batch
from tidegate.processing.conditions import Condition

__all__ = ["COMPONENT", "FilterConfig", "FilterProcessor"]


class FilterConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    conditional: Condition = Field(
        validation_alias=AliasChoices("conditional", "condition"),
        description="`{logical_operation, expressions}`; `condition` is accepted too",
    )
    action: Literal["allow", "drop"] = "allow"


class FilterProcessor:
    def __init__(self, config: FilterConfig) -> None:
        self._predicate = config.conditional.predicate
        self._keep_matching = config.action == "allow"

    async def run(self, events: list[Event], *, context: RunContext) -> NodeOutput:
        kept, discarded = await on_batch(self._split, events, context)
        return NodeOutput(kept, received=len(events), discarded=discarded)

    def _split(self, events: list[Event]) -> tuple[list[Event], list[Event]]:
        predicate, keep = self._predicate, self._keep_matching
        kept: list[Event] = []
        discarded: list[Event] = []
        for event in events:
            (kept if bool(predicate(event)) is keep else discarded).append(event)
        return kept, discarded


def _build(config: FilterConfig, _context: BuildContext, _node: NodeRef) -> FilterProcessor:
    return FilterProcessor(config)


COMPONENT: Component[FilterConfig] = Component(
    kind="processor",
    type="filter",
    config_model=FilterConfig,
    build=_build,
    describe="`action` allow|drop the events matching `conditional` (alias `condition`)",
)

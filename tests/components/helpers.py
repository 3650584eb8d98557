"""Run one processor type from its JSON configuration, as the data plane builds it."""

from __future__ import annotations

from typing import Any

from tidegate.components.base import BuildContext, NodeOutput, NodeRef, RunContext
from tidegate.components.catalogue import REGISTRY
from tidegate.components.validation import validate_user_config

Event = dict[str, Any]


def build(type_: str, user_config: dict[str, Any], context: BuildContext | None = None) -> Any:
    config = validate_user_config(kind="processor", type_=type_, user_config=user_config)
    component = REGISTRY.get("processor", type_)
    return component.build(
        config, context or BuildContext(simulation=True), NodeRef("p", "a", "n", "f")
    )


async def run(
    type_: str, user_config: dict[str, Any], events: list[Event], runtime: Any = None
) -> NodeOutput:
    runtime = runtime or build(type_, user_config)
    frozen = [repr(event) for event in events]
    output: NodeOutput = await runtime.run(events, context=RunContext())
    # Processors never modify the events they are given.
    assert [repr(event) for event in events] == frozen
    return output

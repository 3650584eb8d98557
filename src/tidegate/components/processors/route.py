"""The ``route`` processor: named outputs by condition.

``conditionals`` is a list of ``{label, output_name, logical_operation, expressions}``
(the condition inline, as the platform's clients send it; a nested ``conditional`` is
accepted too). An event goes to **every** output whose condition it matches (in list
order), and to ``_unmatched`` when it matches none. Inputs take an output as
``<route id>.<output_name>`` or ``<route id>._unmatched``; the route's main output is
empty. Events are not copied: they are never modified.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from tidegate.components.base import (
    UNMATCHED,
    BuildContext,
    Component,
    Event,
    NodeOutput,
    NodeRef,
    RunContext,
)
from tidegate.processing.conditions import Condition, ConditionError, compile_condition

__all__ = ["COMPONENT", "RouteConfig", "RouteProcessor"]

OutputName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")]


class RouteConditional(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    label: Annotated[str, Field(max_length=250)] = ""
    output_name: OutputName
    logical_operation: Any = None
    expressions: Any = None
    conditional: Any = None
    _condition: Condition | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _compiled(self) -> RouteConditional:
        if self.conditional is not None:
            if self.expressions is not None or self.logical_operation is not None:
                raise ValueError("give either `conditional` or `expressions`, not both")
            try:
                self._condition = compile_condition(self.conditional)
            except ConditionError as error:
                where = "conditional" + ("." + error.location if error.location else "")
                raise ConditionError(error.reason, where) from None
            return self
        spec: dict[str, Any] = {"expressions": self.expressions}
        if self.logical_operation is not None:
            spec["logical_operation"] = self.logical_operation
        self._condition = compile_condition(spec)
        return self

    @property
    def condition(self) -> Condition:
        assert self._condition is not None
        return self._condition


class RouteConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    conditionals: Annotated[list[RouteConditional], Field(min_length=1, max_length=50)]

    @model_validator(mode="after")
    def _distinct(self) -> RouteConfig:
        seen: set[str] = set()
        for route in self.conditionals:
            if route.output_name in seen:
                raise ValueError(f"output_name {route.output_name!r} is used twice")
            seen.add(route.output_name)
        return self


class RouteProcessor:
    def __init__(self, config: RouteConfig) -> None:
        self._routes = [(r.output_name, r.condition.predicate) for r in config.conditionals]

    async def run(self, events: list[Event], *, context: RunContext) -> NodeOutput:
        named: dict[str, list[Event]] = {name: [] for name, _ in self._routes}
        unmatched: list[Event] = []
        for event in events:
            matched = False
            for name, predicate in self._routes:
                if predicate(event):
                    named[name].append(event)
                    matched = True
            if not matched:
                unmatched.append(event)
        named[UNMATCHED] = unmatched
        return NodeOutput([], named, len(events))


def _build(config: RouteConfig, _context: BuildContext, _node: NodeRef) -> RouteProcessor:
    return RouteProcessor(config)


def _outputs(config: RouteConfig) -> list[str]:
    return [route.output_name for route in config.conditionals] + [UNMATCHED]


COMPONENT: Component[RouteConfig] = Component(
    kind="processor",
    type="route",
    config_model=RouteConfig,
    build=_build,
    describe="Sends each event to every `<id>.<output_name>` whose condition it matches, "
    "else to `<id>._unmatched`",
    outputs=_outputs,
)

"""The ``route`` processor: named outputs by condition.

``conditionals`` is a list of ``{label, output_name, logical_operation, expressions}``
(the condition inline, as the platform's clients send it; a nested ``conditional`` is
accepted too). ``output_name`` may be left out, as the platform's Terraform provider
does: the name is then made from the label (lower case, other characters as ``-``;
``output-<n>`` for an empty one; made distinct), and stored and answered as each
conditional's ``_output_name``, which the provider reads back (a client may send it
back too). An event goes to **every** output whose condition it matches (in list
order), and to ``_unmatched`` when it matches none. Inputs take an output as
``<route id>.<output_name>`` or ``<route id>._unmatched``; the route's main output is
empty. Events are not copied: they are never modified.
"""

from __future__ import annotations

import re
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
from tidegate.components.processors.kit import OutputName, with_output_names
from tidegate.processing.conditions import Condition, ConditionError, compile_condition

__all__ = ["COMPONENT", "RouteConfig", "RouteProcessor"]


class RouteConditional(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    label: Annotated[str, Field(max_length=250)] = ""
    output_name: OutputName | None = None
    generated_name: OutputName | None = Field(default=None, alias="_output_name")
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


def _slug(label: str) -> str:
    text = re.sub(r"[^a-z0-9_-]+", "-", label.lower()).strip("-_")
    return text[:56]


class RouteConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    conditionals: Annotated[list[RouteConditional], Field(min_length=1, max_length=50)]
    _names: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="after")
    def _distinct(self) -> RouteConfig:
        seen: set[str] = set()
        for route in self.conditionals:
            if route.output_name is not None and route.output_name in seen:
                raise ValueError(f"output_name {route.output_name!r} is used twice")
            if route.output_name is not None:
                seen.add(route.output_name)
        names: list[str] = []
        for index, route in enumerate(self.conditionals):
            name = route.output_name or route.generated_name
            if name is None or (route.output_name is None and name in seen):
                base = _slug(route.label) or f"output-{index + 1}"
                name, suffix = base, 2
                while name in seen or name == UNMATCHED:
                    name, suffix = f"{base}-{suffix}", suffix + 1
            seen.add(name)
            names.append(name)
        self._names = tuple(names)
        return self

    @property
    def output_names(self) -> tuple[str, ...]:
        """Each conditional's output, in order (given, or made from its label)."""
        return self._names


class RouteProcessor:
    def __init__(self, config: RouteConfig) -> None:
        self._routes = [
            (name, route.condition.predicate)
            for name, route in zip(config.output_names, config.conditionals, strict=True)
        ]

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
    return [*config.output_names, UNMATCHED]


def _stored(config: RouteConfig, user_config: dict[str, Any]) -> dict[str, Any]:
    """The client's configuration with each conditional's ``_output_name``."""
    return with_output_names(user_config, "conditionals", config.output_names)


COMPONENT: Component[RouteConfig] = Component(
    kind="processor",
    type="route",
    config_model=RouteConfig,
    build=_build,
    describe="Sends each event to every `<id>.<output_name>` whose condition it matches, "
    "else to `<id>._unmatched`",
    outputs=_outputs,
    stored=_stored,
)

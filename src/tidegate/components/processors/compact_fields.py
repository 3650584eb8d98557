"""The ``compact-fields`` processor: removes nulls from the values at ``fields`` (the
whole event when none is given), and empty arrays (``compact_array``) and empty
objects (``compact_object``), recursively."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tidegate.components.base import BuildContext, Component, Event, NodeRef
from tidegate.components.processors.kit import (
    MAX_FIELDS,
    FieldText,
    PerEventProcessor,
    lift_options,
)
from tidegate.components.processors.shape import compact
from tidegate.processing.fields import FieldPath, with_value

__all__ = ["COMPONENT", "CompactFieldsConfig"]


class CompactFieldsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    fields: Annotated[list[FieldText], Field(max_length=MAX_FIELDS)] = []
    _options = model_validator(mode="before")(lift_options)
    compact_array: bool = True
    compact_object: bool = True


def _build(
    config: CompactFieldsConfig, _context: BuildContext, _node: NodeRef
) -> PerEventProcessor:
    paths = [FieldPath.parse(text) for text in config.fields] or [FieldPath.parse(".")]
    arrays, objects = config.compact_array, config.compact_object

    def apply(event: Event) -> Event:
        for path in paths:
            value = path.getter()(event)
            if isinstance(value, dict | list):
                event = with_value(event, path, compact(value, arrays=arrays, objects=objects))
        return event

    return PerEventProcessor(apply, name="compact-fields")


COMPONENT: Component[CompactFieldsConfig] = Component(
    kind="processor",
    type="compact-fields",
    config_model=CompactFieldsConfig,
    build=_build,
    describe="Removes nulls, and empty arrays / objects, from `fields` (or the event)",
)

"""The ``flatten-fields`` processor: nested objects at ``fields`` (the whole event when
none is given) become one level, keys joined by ``delimiter``:
``{"a": {"b": 1}}`` -> ``{"a.b": 1}``. Arrays are kept as values."""

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
from tidegate.components.processors.shape import flatten
from tidegate.processing.fields import FieldPath, with_value

__all__ = ["COMPONENT", "FlattenFieldsConfig"]


class FlattenFieldsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    fields: Annotated[list[FieldText], Field(max_length=MAX_FIELDS)] = []
    _options = model_validator(mode="before")(lift_options)
    delimiter: Annotated[str, Field(min_length=1, max_length=8)] = "."


def _build(
    config: FlattenFieldsConfig, _context: BuildContext, _node: NodeRef
) -> PerEventProcessor:
    paths = [FieldPath.parse(text) for text in config.fields] or [FieldPath.parse(".")]
    delimiter = config.delimiter

    def apply(event: Event) -> Event:
        for path in paths:
            value = path.getter()(event)
            if isinstance(value, dict):
                event = with_value(event, path, flatten(value, delimiter))
        return event

    return PerEventProcessor(apply, name="flatten-fields")


COMPONENT: Component[FlattenFieldsConfig] = Component(
    kind="processor",
    type="flatten-fields",
    config_model=FlattenFieldsConfig,
    build=_build,
    describe="Flattens nested objects at `fields` (or the whole event) joining keys "
    "with `delimiter`",
)

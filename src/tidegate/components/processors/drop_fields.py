"""The ``drop-fields`` processor: removes ``fields`` from each event (a copy)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from tidegate.components.base import BuildContext, Component, Event, NodeRef
from tidegate.components.processors.kit import MAX_FIELDS, FieldText, PerEventProcessor
from tidegate.processing.fields import FieldPath, without

__all__ = ["COMPONENT", "DropFieldsConfig"]


class DropFieldsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    fields: Annotated[list[FieldText], Field(min_length=1, max_length=MAX_FIELDS)]


def _build(config: DropFieldsConfig, _context: BuildContext, _node: NodeRef) -> PerEventProcessor:
    paths = [FieldPath.parse(text) for text in config.fields]

    def drop(event: Event) -> Event:
        for path in paths:
            event = without(event, path)
        return event

    return PerEventProcessor(drop, name="drop-fields")


COMPONENT: Component[DropFieldsConfig] = Component(
    kind="processor",
    type="drop-fields",
    config_model=DropFieldsConfig,
    build=_build,
    describe="Removes `fields` from each event",
)

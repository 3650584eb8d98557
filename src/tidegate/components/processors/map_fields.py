"""The ``map-fields`` processor: copies or moves fields.

Each of ``mappings`` (in order) copies ``source_field`` to ``target_field``; with
``drop_source`` the source is removed (a move). A missing source does nothing; an
existing target is replaced only with ``overwrite_target`` (the platform's name, which
its Terraform provider sends; ``overwrite`` is accepted too)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from tidegate.components.base import BuildContext, Component, Event, NodeRef
from tidegate.components.processors.kit import MAX_FIELDS, FieldText, PerEventProcessor
from tidegate.processing.fields import MISSING, FieldPath, with_value, without

__all__ = ["COMPONENT", "MapFieldsConfig"]


class Mapping(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    source_field: FieldText
    target_field: FieldText
    drop_source: bool = False
    overwrite: bool = Field(
        default=False, validation_alias=AliasChoices("overwrite_target", "overwrite")
    )


class MapFieldsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    mappings: Annotated[list[Mapping], Field(min_length=1, max_length=MAX_FIELDS)]


def _build(config: MapFieldsConfig, _context: BuildContext, _node: NodeRef) -> PerEventProcessor:
    steps = [
        (
            FieldPath.parse(m.source_field),
            FieldPath.parse(m.target_field),
            m.drop_source,
            m.overwrite,
        )
        for m in config.mappings
    ]

    def apply(event: Event) -> Event:
        for source, target, drop_source, overwrite in steps:
            value = source.getter()(event)
            if value is MISSING:
                continue
            if not overwrite and target.getter()(event) is not MISSING:
                continue
            if drop_source:
                event = without(event, source)
            event = with_value(event, target, value)
        return event

    return PerEventProcessor(apply, name="map-fields")


COMPONENT: Component[MapFieldsConfig] = Component(
    kind="processor",
    type="map-fields",
    config_model=MapFieldsConfig,
    build=_build,
    describe="Copies (or with `drop_source` moves) `source_field` to `target_field`",
)

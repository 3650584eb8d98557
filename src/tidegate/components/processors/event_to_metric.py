"""The ``event-to-metric`` processor: each event becomes a metric event

``{"name", "kind", "value": {"type", "value"}, "tags", "timestamp"}`` (the shape the
``is_metric`` condition recognises). ``value_field`` gives the number (a counter
counts 1 per event without one); ``tags`` are ``{name, value}`` where a ``value``
starting with ``.`` reads that event field (tags whose field is missing are left out).
An event whose value is not a number passes unchanged."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tidegate.components.base import BuildContext, Component, Event, NodeRef
from tidegate.components.processors.kit import FieldText, PerEventProcessor
from tidegate.processing.fields import MISSING, FieldPath, string_form

__all__ = ["COMPONENT", "EventToMetricConfig"]


class MetricTag(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: Annotated[str, Field(min_length=1, max_length=128)]
    value: Annotated[str, Field(max_length=1024)]


class EventToMetricConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    metric_name: Annotated[str, Field(min_length=1, max_length=256)]
    metric_kind: Literal["incremental", "absolute"] = "incremental"
    metric_type: Literal["counter", "gauge"] = "counter"
    value_field: FieldText | None = None
    tags: Annotated[list[MetricTag], Field(max_length=50)] = []


def _build(
    config: EventToMetricConfig, _context: BuildContext, _node: NodeRef
) -> PerEventProcessor:
    get_value = None if config.value_field is None else FieldPath.parse(config.value_field).getter()
    tags: list[tuple[str, Any]] = [
        (tag.name, FieldPath.parse(tag.value).getter() if tag.value.startswith(".") else tag.value)
        for tag in config.tags
    ]
    get_time = FieldPath.parse(".timestamp").getter()

    def apply(event: Event) -> Event:
        if get_value is None:
            number: float | int = 1
        else:
            raw = get_value(event)
            if isinstance(raw, bool) or not isinstance(raw, int | float):
                return event
            if isinstance(raw, float) and not math.isfinite(raw):
                return event
            number = raw
        metric_tags: dict[str, str] = {}
        for name, source in tags:
            value = source(event) if callable(source) else source
            if value is not MISSING:
                metric_tags[name] = string_form(value)[:1024]
        metric: Event = {
            "name": config.metric_name,
            "kind": config.metric_kind,
            "value": {"type": config.metric_type, "value": number},
            "tags": metric_tags,
        }
        stamp = get_time(event)
        if stamp is not MISSING:
            metric["timestamp"] = stamp
        return metric

    return PerEventProcessor(apply, name="event-to-metric")


COMPONENT: Component[EventToMetricConfig] = Component(
    kind="processor",
    type="event-to-metric",
    config_model=EventToMetricConfig,
    build=_build,
    describe="Turns each event into a metric `{name, kind, value: {type, value}, tags}`",
)

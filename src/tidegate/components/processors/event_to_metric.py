"""The ``event-to-metric`` processor: each event becomes a metric event

``{"name", "kind", "value": {"type", "value"}, "tags", "timestamp"}`` (the shape the
``is_metric`` condition recognises). ``value_field`` gives the number (a counter
counts 1 per event without one); ``tags`` are ``{name, value}`` where a ``value``
starting with ``.`` reads that event field (tags whose field is missing are left out).
An event whose value is not a number passes unchanged.

The platform's Terraform provider's shape is read too: ``value`` as ``{"value_type":
"field", "value": "<path>"}`` (``value_field``) or ``{"value_type": "value", "value":
<number>}`` (every metric has that number); ``namespace`` ``{"value_type": "none" |
"value" | "field", "value"}`` (the metric's ``namespace``, left out for none or a
missing field); tags with ``value_type`` ``field`` (``value`` is a path) or ``value``
(``value`` is the text, even when it starts with ``.``); ``metric_type`` ``sum``.
What was sent is stored and read back."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tidegate.components.base import BuildContext, Component, Event, NodeRef
from tidegate.components.processors.kit import FieldText, PerEventProcessor
from tidegate.processing.fields import MISSING, FieldPath, string_form

__all__ = ["COMPONENT", "EventToMetricConfig"]


class MetricTag(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: Annotated[str, Field(min_length=1, max_length=128)]
    value: Annotated[str, Field(max_length=1024)]
    value_type: Literal["field", "value"] | None = None
    """The platform's; None: a value starting with ``.`` is a field."""


class Namespace(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    value_type: Literal["none", "value", "field"] = "none"
    value: Annotated[str, Field(min_length=1, max_length=256)] | None = None


class EventToMetricConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    metric_name: Annotated[str, Field(min_length=1, max_length=256)]
    metric_kind: Literal["incremental", "absolute"] = "incremental"
    metric_type: Literal["counter", "sum", "gauge"] = "counter"
    value_field: FieldText | None = None
    value_number: float | None = None
    namespace: Namespace = Namespace()
    tags: Annotated[list[MetricTag], Field(max_length=50)] = []

    @model_validator(mode="before")
    @classmethod
    def _platform_value(cls, data: Any) -> Any:
        """``value: {value_type, value}`` -> ``value_field`` or ``value_number``."""
        if not isinstance(data, dict) or not isinstance(data.get("value"), dict):
            return data
        rest = {key: item for key, item in data.items() if key != "value"}
        source = data["value"]
        if set(source) != {"value_type", "value"}:
            raise ValueError("value: {value_type: field|value, value}")
        if source["value_type"] == "field":
            return {**rest, "value_field": source["value"]}
        if source["value_type"] == "value":
            return {**rest, "value_number": source["value"]}
        raise ValueError("value: value_type is field or value")

    @model_validator(mode="after")
    def _whole(self) -> EventToMetricConfig:
        if self.value_field is not None and self.value_number is not None:
            raise ValueError("give value_field or a constant value, not both")
        if self.value_number is not None and not math.isfinite(self.value_number):
            raise ValueError("value: a finite number")
        if (self.namespace.value_type == "none") != (self.namespace.value is None):
            raise ValueError("namespace: a value exactly when value_type is value or field")
        if self.namespace.value_type == "field":
            FieldPath.parse(self.namespace.value or "")
        return self


def _tag_source(tag: MetricTag) -> Any:
    """The tag's constant text, or a getter of the field it reads."""
    reads = tag.value_type == "field" or (tag.value_type is None and tag.value.startswith("."))
    return FieldPath.parse(tag.value).getter() if reads else tag.value


def _build(
    config: EventToMetricConfig, _context: BuildContext, _node: NodeRef
) -> PerEventProcessor:
    get_value = None if config.value_field is None else FieldPath.parse(config.value_field).getter()
    tags: list[tuple[str, Any]] = [(tag.name, _tag_source(tag)) for tag in config.tags]
    namespace = config.namespace
    get_namespace: Any = (
        FieldPath.parse(namespace.value or "").getter()
        if namespace.value_type == "field"
        else (lambda _event: namespace.value if namespace.value_type == "value" else MISSING)
    )
    constant = config.value_number
    get_time = FieldPath.parse(".timestamp").getter()

    def apply(event: Event) -> Event:
        if get_value is None:
            number: float | int = 1 if constant is None else constant
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
        space = get_namespace(event)
        if space is not MISSING:
            metric["namespace"] = string_form(space)[:256]
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

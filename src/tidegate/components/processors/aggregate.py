"""The ``aggregate`` processor, in two shapes.

The platform's (its aggregate-v2, as its Terraform provider writes it): ``window{}``
and ``evaluate{}``, metric events folded per series in tumbling or sliding windows;
``aggregate_windows`` runs it.

tidegate's own: counts (or sums, min, max, average of ``field``) the
events matching ``conditional`` per ``group_by`` values in tumbling windows of
``interval`` ms, and emits one metric event per group and window:

``{"name": "aggregate", "kind": "absolute", "value": {"type": "counter"|"gauge",
"value": n}, "tags": {<group field>: <value>}, "timestamp": <window start ms>,
"interval_ms": interval}``

Events not matching ``conditional`` pass through untouched; matching events are
consumed (their metrics replace them). ``event_timestamp``: windows by the event's
``timestamp`` (epoch ms or ISO 8601) instead of processing time. Only ``tumbling``
windows are supported (``window_type: sliding`` is refused).

Time: a window is emitted when a batch arrives after it ended (no timer per node), so
the last window of a quiet stream waits for traffic; held counts are lost on a restart.
Bounded: at most ``MAX_GROUPS`` open (window, group) pairs; events past it pass
through. A simulation emits every open window at the end.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, model_validator

from tidegate.components.base import (
    BuildContext,
    Component,
    Event,
    NodeOutput,
    NodeRef,
    RunContext,
    config_refused,
)
from tidegate.components.processors.aggregate_windows import (
    Evaluate,
    MetricAggregator,
    ScriptAggregator,
    Window,
    default_window_min_s,
)
from tidegate.components.processors.javascript import Script, shared_sandbox
from tidegate.components.processors.kit import FieldText, processing_clock
from tidegate.kit.destination_guard import DestinationPolicy
from tidegate.logs.timestamps import epoch_ms
from tidegate.processing.conditions import Condition
from tidegate.processing.fields import MISSING, FieldPath, string_form

__all__ = ["COMPONENT", "MAX_GROUPS", "AggregateConfig"]

MAX_GROUPS: Final = 10_000


# Fields of tidegate's own shape, refused beside the platform's window{}/evaluate{}.
_OWN_SHAPE: Final = frozenset({"interval", "window_type", "operation", "field", "metric_name"})
DEFAULT_EVENT_TIMESTAMP: Final = "timestamp"
"""The platform's shape: the field read as the event's time when none is named."""


class AggregateConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    # tidegate's own shape
    interval: Annotated[int, Field(strict=True, ge=1_000, le=86_400_000)] = 60_000
    window_type: Literal["tumbling"] = "tumbling"
    operation: Literal["count", "sum", "min", "max", "average"] = "count"
    field: FieldText | None = None
    metric_name: Annotated[str, Field(min_length=1, max_length=256)] = "aggregate"
    # both shapes
    conditional: Condition | None = None
    group_by: Annotated[list[FieldText], Field(max_length=10)] = []
    event_timestamp: bool | FieldText = Field(
        default=False,
        description="own shape: true to window by the event's `timestamp`; the platform's "
        "shape: the field holding the event's time (default `timestamp`)",
    )
    # the platform's shape
    window: Window | None = None
    evaluate: Evaluate | None = None

    @model_validator(mode="after")
    def _one_shape(self) -> AggregateConfig:
        if self.window is None and self.evaluate is None:
            if isinstance(self.event_timestamp, str):
                raise ValueError("event_timestamp is true or false (a field with window{})")
            if self.operation != "count" and self.field is None:
                raise ValueError(f"operation {self.operation} needs `field`")
            return self
        if self.window is None or self.evaluate is None:
            raise ValueError("window and evaluate go together")
        mixed = sorted(self.model_fields_set & _OWN_SHAPE)
        if mixed:
            raise ValueError(f"{', '.join(mixed)}: not beside window and evaluate")
        if isinstance(self.event_timestamp, bool) and "event_timestamp" in self.model_fields_set:
            raise ValueError("event_timestamp is a field path beside window and evaluate")
        return self

    @property
    def time_field(self) -> str:
        """The platform's shape: the field read as the event's time."""
        stamp = self.event_timestamp
        return stamp if isinstance(stamp, str) else DEFAULT_EVENT_TIMESTAMP


class _Window:
    __slots__ = ("count", "maximum", "minimum", "tags", "total")

    def __init__(self, tags: dict[str, str]) -> None:
        self.tags = tags
        self.count = 0
        self.total = 0.0
        self.minimum: float | None = None
        self.maximum: float | None = None


class AggregateProcessor:
    def __init__(self, config: AggregateConfig, *, clock: Any, flush_at_end: bool) -> None:
        self._config = config
        self._clock = clock
        self._flush_at_end = flush_at_end
        self._test = None if config.conditional is None else config.conditional.predicate
        self._group_by = [(text, FieldPath.parse(text).getter()) for text in config.group_by]
        self._value = None if config.field is None else FieldPath.parse(config.field).getter()
        self._time = FieldPath.parse(".timestamp").getter()
        self._windows: dict[tuple[int, bytes], _Window] = {}

    async def run(self, events: list[Event], *, context: RunContext) -> NodeOutput:
        now = context.now_ms if context.now_ms is not None else self._clock.now_ms()
        out = self._closed(now)
        for event in events:
            try:
                if not self._consume(event, now):
                    out.append(event)
            except Exception:  # any: one odd event never fails its batch
                out.append(event)
        if self._flush_at_end:
            out.extend(self._emit(key) for key in sorted(self._windows))
        return NodeOutput(out, {}, len(events))

    def _consume(self, event: Event, now: int) -> bool:
        if self._test is not None and not self._test(event):
            return False
        number: float | None = None
        if self._value is not None:
            raw = self._value(event)
            if isinstance(raw, bool) or not isinstance(raw, int | float):
                return False
            number = float(raw)
        at = now
        if self._config.event_timestamp:
            stamp = epoch_ms(self._time(event))
            if stamp is None:
                return False
            at = stamp
        interval = self._config.interval
        start = at - at % interval
        values = [(name, get(event)) for name, get in self._group_by]
        key = (start, orjson.dumps([v for _, v in values], default=str))
        window = self._windows.get(key)
        if window is None:
            if len(self._windows) >= MAX_GROUPS:
                return False
            tags = {
                name.lstrip("."): string_form(v)[:1024] for name, v in values if v is not MISSING
            }
            window = self._windows[key] = _Window(tags)
        window.count += 1
        if number is not None:
            window.total += number
            window.minimum = number if window.minimum is None else min(window.minimum, number)
            window.maximum = number if window.maximum is None else max(window.maximum, number)
        return True

    def _closed(self, now: int) -> list[Event]:
        interval = self._config.interval
        if self._config.event_timestamp:
            # Event time: a window closes once processing time is an interval past it.
            due = [key for key in self._windows if key[0] + 2 * interval <= now]
        else:
            due = [key for key in self._windows if key[0] + interval <= now or key[0] > now]
        return [self._emit(key) for key in sorted(due)]

    def _emit(self, key: tuple[int, bytes]) -> Event:
        window = self._windows.pop(key)
        operation = self._config.operation
        value: float | int
        if operation == "count":
            value = window.count
        elif operation == "sum":
            value = window.total
        elif operation == "average":
            value = window.total / window.count if window.count else 0.0
        elif operation == "min":
            value = window.minimum if window.minimum is not None else 0.0
        else:
            value = window.maximum if window.maximum is not None else 0.0
        return {
            "name": self._config.metric_name,
            "kind": "absolute",
            "value": {
                "type": "counter" if operation in ("count", "sum") else "gauge",
                "value": value,
            },
            "tags": window.tags,
            "timestamp": key[0],
            "interval_ms": self._config.interval,
        }


def _build(
    config: AggregateConfig, context: BuildContext, node: NodeRef
) -> AggregateProcessor | MetricAggregator | ScriptAggregator:
    clock = processing_clock(context)
    if config.window is not None and config.evaluate is not None:
        shared = {
            "window": config.window,
            "evaluate": config.evaluate,
            "group_by": config.group_by,
            "conditional": config.conditional,
            "event_timestamp": config.time_field,
            "clock": clock,
            "flush_at_end": context.simulation,
        }
        if config.evaluate.script is not None:
            return ScriptAggregator(
                script=Script.of(config.evaluate.script),
                name=f"{node.node_id} of pipeline {node.pipeline_id}",
                **shared,
            )
        return MetricAggregator(**shared)
    return AggregateProcessor(config, clock=clock, flush_at_end=context.simulation)


async def _vet(config: AggregateConfig, _policy: DestinationPolicy) -> None:
    """CUSTOM: the script loads in a sandbox process, as the js-script processor's."""
    if config.evaluate is None or config.evaluate.script is None:
        return
    reason = await shared_sandbox().check(Script.of(config.evaluate.script))
    if reason is None:
        return
    raise config_refused(
        "/evaluate/script",
        f"is not valid JavaScript: {reason}",
        keyword="format",
        params={"format": "javascript"},
    )


def _stored(config: AggregateConfig, user_config: dict[str, Any]) -> dict[str, Any]:
    """The platform's shape with the defaults its Terraform provider reads back as
    computed: ``event_timestamp`` and ``window.window_min``."""
    if config.window is None or not isinstance(user_config.get("window"), dict):
        return user_config
    stored = {**user_config, "event_timestamp": config.time_field}
    if user_config["window"].get("window_min") is None:
        window_min = default_window_min_s(config.window)
        stored["window"] = {**user_config["window"], "window_min": window_min}
    return stored


COMPONENT: Component[AggregateConfig] = Component(
    kind="processor",
    type="aggregate",
    config_model=AggregateConfig,
    build=_build,
    vet=_vet,
    describe="The platform's window{}/evaluate{} metric aggregation (tumbling or sliding "
    "windows of `interval` s; CUSTOM: a JavaScript fold of any events), or counts (sum/min/max/average of `field`) of matching "
    "events per `group_by` in tumbling windows of `interval` ms",
    aliases=("aggregate-v2",),
    stored=_stored,
)

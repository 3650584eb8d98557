"""The ``reduce`` processor: merges the events of one group (multi-line messages, a
transaction's events) into one event.

Events are grouped by the values of ``group_by`` (all in one group without it). A
group is flushed, as one merged event on the main output, when it holds
``max_events``, when ``flush_condition`` says so (``ends_when``: the matching event
ends its group; ``starts_when``: it starts a new one, flushing the previous), or once
``duration_ms`` has passed since its first event. Fields merge per
``merge_strategies`` (``array``, ``concat``, ``concat_newline``, ``discard`` (keep the
first), ``retain`` (keep the last), ``sum``, ``max``, ``min``, ``flat_unique``);
without one, numbers are summed and other values keep the first. The merged event
gains ``timestamp_end`` (the last event's ``timestamp``) when the events have one.

Time: expired groups are flushed when the next batch reaches the node (the gateway has
no timer per node): a quiet stream holds its last groups until traffic resumes, and
held events are lost on a restart. Bounded: at most ``MAX_GROUPS`` groups (events of a
new group past it pass unreduced), a merged string at most ``MAX_TEXT`` characters, an
array at most ``max_events`` items. A simulation flushes every group at the end.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Final, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

from tidegate.components.base import (
    BuildContext,
    Component,
    Event,
    NodeOutput,
    NodeRef,
    RunContext,
)
from tidegate.components.processors.kit import FieldText, processing_clock
from tidegate.processing.conditions import Condition
from tidegate.processing.fields import MISSING, FieldPath, with_value

__all__ = ["COMPONENT", "MAX_GROUPS", "ReduceConfig"]

MAX_GROUPS: Final = 10_000
MAX_TEXT: Final = 1024 * 1024
Strategy = Literal[
    "array", "concat", "concat_newline", "discard", "retain", "sum", "max", "min", "flat_unique"
]


class FlushCondition(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    when: Literal["ends_when", "starts_when"] = "ends_when"
    conditional: Condition


class ReduceConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    duration_ms: Annotated[int, Field(strict=True, ge=100, le=3_600_000)] = 30_000
    max_events: Annotated[int, Field(strict=True, ge=1, le=10_000)] = 100
    group_by: Annotated[list[FieldText], Field(max_length=10)] = []
    merge_strategies: Annotated[dict[FieldText, Strategy], Field(max_length=100)] = {}
    flush_condition: FlushCondition | None = None


class _Group:
    __slots__ = ("count", "first_ms", "merged", "values")

    def __init__(self, event: Event, now: int) -> None:
        self.first_ms = now
        self.count = 0
        self.merged: Event = event
        self.values: dict[str, Any] = {}


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _merge(strategy: str, old: Any, new: Any, cap: int) -> Any:
    if strategy == "array":
        items = old if isinstance(old, list) else [old]
        return [*items, new] if len(items) < cap else items
    if strategy in ("concat", "concat_newline"):
        joiner = "\n" if strategy == "concat_newline" else " "
        text = f"{old}{joiner}{new}" if isinstance(old, str) and isinstance(new, str) else old
        return text[:MAX_TEXT] if isinstance(text, str) else text
    if strategy == "retain":
        return new
    if strategy in ("sum", "max", "min") and _number(old) and _number(new):
        return old + new if strategy == "sum" else (max if strategy == "max" else min)(old, new)
    if strategy == "flat_unique":
        items = old if isinstance(old, list) else [old]
        added = new if isinstance(new, list) else [new]
        seen = {orjson.dumps(item, default=str) for item in items}
        for item in added:
            key = orjson.dumps(item, default=str)
            if key not in seen and len(items) < cap:
                items = [*items, item]
                seen.add(key)
        return items
    return old  # discard, or a strategy that does not apply to these values


class ReduceProcessor:
    def __init__(self, config: ReduceConfig, *, clock: Any, flush_at_end: bool) -> None:
        self._config = config
        self._clock = clock
        self._flush_at_end = flush_at_end
        self._group_by = [FieldPath.parse(text).getter() for text in config.group_by]
        self._strategies = {
            key: (FieldPath.parse(key), strategy)
            for key, strategy in config.merge_strategies.items()
        }
        # Top-level fields a strategy handles: the default merge leaves them alone.
        self._handled = {
            path.segments[0]
            for path, _ in self._strategies.values()
            if path.segments and isinstance(path.segments[0], str)
        }
        flush = config.flush_condition
        self._flush_when = None if flush is None else flush.when
        self._flush_test: Callable[[Any], bool] | None = (
            None if flush is None else flush.conditional.predicate
        )
        self._groups: dict[bytes, _Group] = {}

    @property
    def groups(self) -> int:
        return len(self._groups)

    async def run(self, events: list[Event], *, context: RunContext) -> NodeOutput:
        now = context.now_ms if context.now_ms is not None else self._clock.now_ms()
        out = self._expired(now)
        for event in events:
            try:
                out.extend(self._add(event, now))
            except Exception:  # any: one odd event never fails its batch
                out.append(event)
        if self._flush_at_end:
            out.extend(self._flushed(key) for key in list(self._groups))
        return NodeOutput(out, {}, len(events))

    def _expired(self, now: int) -> list[Event]:
        limit = self._config.duration_ms
        return [
            self._flushed(key)
            for key, group in list(self._groups.items())
            if now - group.first_ms >= limit or now < group.first_ms
        ]

    def _add(self, event: Event, now: int) -> list[Event]:
        key = orjson.dumps([get(event) for get in self._group_by], default=str)
        flushed: list[Event] = []
        matches = self._flush_test is not None and bool(self._flush_test(event))
        if matches and self._flush_when == "starts_when" and key in self._groups:
            flushed.append(self._flushed(key))
        group = self._groups.get(key)
        if group is None:
            if len(self._groups) >= MAX_GROUPS:
                return [*flushed, event]
            group = self._groups[key] = _Group(dict(event), now)
            group.count = 1
        else:
            self._fold(group, event)
        if group.count >= self._config.max_events or (matches and self._flush_when == "ends_when"):
            flushed.append(self._flushed(key))
        return flushed

    def _fold(self, group: _Group, event: Event) -> None:
        group.count += 1
        merged = group.merged
        cap = self._config.max_events
        for name, value in event.items():
            if name in self._handled:
                continue
            old = merged.get(name, MISSING)
            if old is MISSING:
                merged[name] = value
            elif name == "timestamp":
                merged["timestamp_end"] = value
            elif _number(old) and _number(value):
                merged[name] = old + value
        for path, strategy in self._strategies.values():
            value = path.getter()(event)
            if value is MISSING:
                continue
            old = path.getter()(merged)
            new = value if old is MISSING else _merge(strategy, old, value, cap)
            group.merged = merged = with_value(merged, path, new)

    def _flushed(self, key: bytes) -> Event:
        group = self._groups.pop(key)
        merged = group.merged
        for path, strategy in self._strategies.values():
            value = path.getter()(merged)
            if strategy in ("array", "flat_unique") and value is not MISSING:
                if not isinstance(value, list):
                    merged = with_value(merged, path, [value])
        return merged


def _build(config: ReduceConfig, context: BuildContext, _node: NodeRef) -> ReduceProcessor:
    return ReduceProcessor(config, clock=processing_clock(context), flush_at_end=context.simulation)


COMPONENT: Component[ReduceConfig] = Component(
    kind="processor",
    type="reduce",
    config_model=ReduceConfig,
    build=_build,
    describe="Merges the events of a group (`group_by`) into one, flushed after "
    "`duration_ms`, `max_events` or `flush_condition`",
)

"""The ``reduce`` processor: merges the events of one group (multi-line messages, a
transaction's events) into one event.

Events are grouped by the values of ``group_by`` (all in one group without it). A
group is flushed, as one merged event on the main output, when it holds
``max_events``, when ``flush_condition`` says so (``ends_when``: the matching event
ends its group; ``starts_when``: it starts a new one, flushing the previous), or once
``duration_ms`` has passed since its first event. Fields merge per
``merge_strategies`` (``array``, ``concat``, ``concat_newline``, ``concat_raw`` (no
separator), ``discard`` (keep the first), ``retain`` (keep the last), ``sum``, ``max``,
``min``, ``flat_unique``, ``shortest_array``, ``longest_array`` (keep the shorter or
longer array seen)); without one, numbers are summed and other values keep the first.
``merge_strategies`` is a map ``{field: strategy}`` or, as the platform's Terraform
provider writes it, a list of ``{"field", "strategy"}``. ``date_formats`` (a list of
``{"field", "format"}``, ``strptime`` formats) names fields holding dates as text:
``min`` and ``max`` compare them as times (the text kept is the earliest or latest). The merged event
gains ``timestamp_end`` (the last event's ``timestamp``) when the events have one.

Time: expired groups are flushed when the next batch reaches the node (the gateway has
no timer per node): a quiet stream holds its last groups until traffic resumes, and
held events are lost on a restart. Bounded: at most ``MAX_GROUPS`` groups (events of a
new group past it pass unreduced), a merged string at most ``MAX_TEXT`` characters, an
array at most ``max_events`` items. A simulation flushes every group at the end.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any, Final, Literal

import orjson
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

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
    "array",
    "concat",
    "concat_newline",
    "concat_raw",
    "discard",
    "retain",
    "sum",
    "max",
    "min",
    "flat_unique",
    "shortest_array",
    "longest_array",
]
_JOINERS: Final = {"concat": " ", "concat_newline": "\n", "concat_raw": ""}


class DateFormat(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    field: FieldText
    format: Annotated[str, Field(min_length=1, max_length=128)]


def _strategy_map(value: Any) -> Any:
    """``[{"field", "strategy"}, ...]`` (the platform's) -> ``{field: strategy}``."""
    if not isinstance(value, list):
        return value
    pairs: dict[Any, Any] = {}
    for item in value:
        if not isinstance(item, dict) or set(item) != {"field", "strategy"}:
            raise ValueError("each merge strategy is {field, strategy}")
        if item["field"] in pairs:
            raise ValueError(f"{item['field']}: given twice")
        pairs[item["field"]] = item["strategy"]
    return pairs


class FlushCondition(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    when: Literal["ends_when", "starts_when"] = "ends_when"
    conditional: Condition


class ReduceConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    duration_ms: Annotated[int, Field(strict=True, ge=100, le=3_600_000)] = 30_000
    max_events: Annotated[int, Field(strict=True, ge=1, le=10_000)] = 100
    group_by: Annotated[list[FieldText], Field(max_length=10)] = []
    merge_strategies: Annotated[
        dict[FieldText, Strategy], Field(max_length=100), BeforeValidator(_strategy_map)
    ] = {}
    date_formats: Annotated[list[DateFormat], Field(max_length=100)] = []
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


def _as_date(value: Any, format_: str) -> datetime | None:
    if not isinstance(value, str) or len(value) > 256:
        return None
    try:
        parsed = datetime.strptime(value, format_)  # noqa: DTZ007 (UTC below, unless %z)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _merge_dates(strategy: str, old: Any, new: Any, format_: str) -> Any:
    """``min``/``max`` of two dates written as text: the text of the earlier/later."""
    then, now = _as_date(old, format_), _as_date(new, format_)
    if then is None or now is None:
        return old
    if strategy == "min":
        return new if now < then else old
    return new if now > then else old


def _merge(strategy: str, old: Any, new: Any, cap: int) -> Any:
    if strategy == "array":
        items = old if isinstance(old, list) else [old]
        return [*items, new] if len(items) < cap else items
    if strategy in _JOINERS:
        joiner = _JOINERS[strategy]
        text = f"{old}{joiner}{new}" if isinstance(old, str) and isinstance(new, str) else old
        return text[:MAX_TEXT] if isinstance(text, str) else text
    if strategy in ("shortest_array", "longest_array"):
        if not (isinstance(old, list) and isinstance(new, list)):
            return old
        shorter = len(new) < len(old)
        longer = len(new) > len(old)
        return new if (shorter if strategy == "shortest_array" else longer) else old
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
        self._dates = {
            FieldPath.parse(date.field).segments: date.format for date in config.date_formats
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
            date_format = self._dates.get(path.segments)
            if old is MISSING:
                new = value
            elif date_format is not None and strategy in ("min", "max"):
                new = _merge_dates(strategy, old, value, date_format)
            else:
                new = _merge(strategy, old, value, cap)
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

"""The ``aggregate`` processor in the platform's shape (its aggregate-v2, as its
Terraform provider writes it): metric events of one series folded together in time
windows, one metric event out per window.

``{"window": {"type": "tumbling"|"sliding", "interval": <s>, "window_min": <s>},
"evaluate": {"operation": "SUM"}, "group_by": [...], "conditional": {...},
"event_timestamp": ".timestamp"}``

* **Series**: metric events (``{name, namespace?, kind, value: {type, value}, tags}``)
  with the same name, namespace, kind and value type, and the same ``group_by`` values
  (without ``group_by``: the same tags).
* **Time**: the event's ``event_timestamp`` field (epoch ms or ISO 8601), else
  processing time; a time more than an interval ahead of processing time is read as
  processing time.
* **Windows**: ``tumbling``: ``[k * interval, (k + 1) * interval)``, each event in one.
  ``sliding``: windows of ``interval`` starting at events: an event folds into every
  open window of its series holding its time, and opens one at its time when none
  opened in the ``window_min`` before it (the platform's engine; default and floor:
  below).
* **Evaluate**: ``DEFAULT`` (the platform's "add": an incremental metric's values are
  added, sets joined, distributions concatenated; an absolute metric keeps its latest
  value), ``SUM``, ``MIN``, ``MAX``, ``AVG`` (numeric values), ``SET_INTERSECTION``
  (``set`` values: a list), ``DIST_CONCAT`` (``distribution`` values: ``{samples:
  [...], statistic}``). An event the operation cannot fold (not a metric, another value
  type) passes unchanged. ``CUSTOM``: any event, folded by the tenant's JavaScript
  ``fn(accum, event)`` (``ScriptAggregator``; series: the ``group_by`` values only).
* **Out**: the window's first event, its ``value`` the result, ``tags`` those every
  event of the window shares, ``timestamp`` the latest event's time, and
  ``metadata.aggregate`` ``{event_count, start_timestamp, end_timestamp,
  flush_timestamp}`` (epoch ms), as the platform writes it. A window leaves once
  processing time reaches its end (checked when a batch arrives), or at once when
  ``conditional`` holds for it (the platform's flush condition); the next event of its
  time opens a new one.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Annotated, Any, Final, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, model_validator

from tidegate.components.base import Event, NodeOutput, RunContext
from tidegate.components.processors.javascript import (
    Outcome,
    Sandbox,
    Script,
    ScriptUser,
    Slot,
)
from tidegate.components.processors.kit import on_batch
from tidegate.logs.timestamps import epoch_ms
from tidegate.processing.conditions import Condition
from tidegate.processing.fields import MISSING, FieldPath

__all__ = [
    "MAX_MEMBERS",
    "MAX_OPEN_WINDOWS",
    "MAX_SERIES",
    "Evaluate",
    "MetricAggregator",
    "ScriptAggregator",
    "Window",
    "effective_slide_s",
]

MAX_SERIES: Final = 10_000
"""Series held per node and worker; events of new series past it pass unchanged."""
MAX_OPEN_WINDOWS: Final = 60
"""Open windows per series: a sliding window's ``window_min`` is at least
``interval / MAX_OPEN_WINDOWS``, so one event folds into at most this many."""
MAX_MEMBERS: Final = 10_000
"""Set members and distribution samples one window holds; more are not added."""
MAX_INTERVAL_S: Final = 90_000
"""25 hours, the platform's upper bound."""

Operation = Literal[
    "DEFAULT", "SUM", "MIN", "MAX", "AVG", "SET_INTERSECTION", "DIST_CONCAT", "CUSTOM"
]
Seconds = Annotated[int, Field(strict=True, ge=0, le=MAX_INTERVAL_S)]


class Window(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    type: Literal["tumbling", "sliding"]
    interval: Annotated[int, Field(strict=True, ge=1, le=MAX_INTERVAL_S)] = Field(
        description="seconds"
    )
    window_min: Seconds | None = Field(
        default=None,
        description="sliding: seconds between window starts at least (0 or absent: a "
        "tenth of the interval)",
    )


class Evaluate(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    operation: Operation
    script: Annotated[str, Field(max_length=65_536)] | None = None

    @model_validator(mode="after")
    def _script(self) -> Evaluate:
        if self.operation == "CUSTOM":
            if not self.script:
                raise ValueError("operation CUSTOM needs a script")
        elif self.script is not None:
            raise ValueError("script goes with operation CUSTOM only")
        return self


def default_window_min_s(window: Window) -> int:
    """What ``window_min`` is when not sent: the interval for a tumbling window, a
    tenth of it (at least a second) for a sliding one."""
    if window.type == "tumbling":
        return window.interval
    return max(1, math.ceil(window.interval / 10))


def effective_slide_s(window: Window) -> float:
    """Seconds between a series' sliding window starts, at least."""
    wanted = window.window_min or default_window_min_s(window)
    return max(float(wanted), window.interval / MAX_OPEN_WINDOWS)


@dataclass(slots=True)
class _Open:
    start: int
    end: int
    base: Event
    value: Any
    tags: dict[str, Any] | None
    last_ms: int
    count: int = 1
    total: float = 0.0
    changed: bool = True
    members: dict[bytes, Any] = field(default_factory=dict)
    slot: int | None = None
    """CUSTOM: the window's place among the slots of the batch being folded."""


class _NotFolded(Exception):
    """The event is not a metric this operation folds: it passes unchanged."""


def _number(value: Any) -> float | int:
    if value.__class__ is bool or not isinstance(value, int | float):
        raise _NotFolded
    if isinstance(value, float) and not math.isfinite(value):
        raise _NotFolded
    return value


def _member_key(member: Any) -> bytes:
    return orjson.dumps(member, option=orjson.OPT_SORT_KEYS, default=str)


def _set(value: Any) -> list[Any]:
    if not isinstance(value, list) or len(value) > MAX_MEMBERS:
        raise _NotFolded
    return value


def _samples(value: Any) -> list[Any]:
    samples = value.get("samples") if isinstance(value, dict) else None
    if not isinstance(samples, list):
        raise _NotFolded
    return samples


_NUMERIC: Final = frozenset({"SUM", "MIN", "MAX", "AVG"})


def _start(operation: str, kind: str, value_type: str, value: Any, window: _Open) -> Any:
    """The window's value from its first event."""
    if operation in _NUMERIC:
        number = _number(value)
        window.total = float(number)
        return number
    if operation == "SET_INTERSECTION" or (operation == "DEFAULT" and value_type == "set"):
        members = _set(value)
        window.members = {_member_key(member): member for member in members}
        return None
    if operation == "DIST_CONCAT" or (operation == "DEFAULT" and value_type == "distribution"):
        samples = _samples(value)
        return {**value, "samples": samples[:MAX_MEMBERS]}
    if kind == "absolute":  # DEFAULT on any other value: the latest one
        return value
    return _number(value)  # DEFAULT on an incremental number


def _add(operation: str, kind: str, value_type: str, window: _Open, value: Any) -> None:
    if operation in _NUMERIC:
        number = _number(value)
        window.total += number
        if operation == "SUM":
            window.value += number
        elif operation == "MIN":
            window.value = min(window.value, number)
        elif operation == "MAX":
            window.value = max(window.value, number)
    elif operation == "SET_INTERSECTION":
        kept = {_member_key(member) for member in _set(value)}
        window.members = {key: m for key, m in window.members.items() if key in kept}
    elif operation == "DIST_CONCAT" or (operation == "DEFAULT" and value_type == "distribution"):
        samples = _samples(value)
        if operation == "DEFAULT" and kind == "absolute":
            window.value = {**value, "samples": samples[:MAX_MEMBERS]}
        else:
            room = MAX_MEMBERS - len(window.value["samples"])
            window.value["samples"].extend(samples[: max(room, 0)])
    elif value_type == "set":  # DEFAULT
        members = _set(value)
        if kind == "absolute":
            window.members = {_member_key(member): member for member in members}
        else:
            for member in members:
                if len(window.members) >= MAX_MEMBERS:
                    break
                window.members.setdefault(_member_key(member), member)
    elif kind == "absolute":
        window.value = value
    else:
        window.value += _number(value)


def _result(operation: str, value_type: str, window: _Open) -> Any:
    if operation == "AVG":
        return window.total / window.count
    if operation == "SET_INTERSECTION" or (operation == "DEFAULT" and value_type == "set"):
        return list(window.members.values())
    return window.value


@dataclass(frozen=True, slots=True)
class _Metric:
    kind: str
    value_type: str
    value: Any


def _metric(event: Event) -> _Metric | None:
    value = event.get("value")
    name = event.get("name")
    kind = event.get("kind")
    if not isinstance(name, str) or kind not in ("incremental", "absolute"):
        return None
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        return None
    if "value" not in value:
        return None
    return _Metric(kind, value["type"], value["value"])


class _Windowed:
    """Series of open windows per node and worker: where an event falls, and which
    windows leave; ``_output`` is a leaving window's event."""

    def __init__(
        self,
        *,
        window: Window,
        evaluate: Evaluate,
        group_by: list[str],
        conditional: Condition | None,
        event_timestamp: str,
        clock: Any,
        flush_at_end: bool,
    ) -> None:
        self._tumbling = window.type == "tumbling"
        self._interval_ms = window.interval * 1000
        self._slide_ms = effective_slide_s(window) * 1000
        self._operation = evaluate.operation
        self._group_by: list[Callable[[Any], Any]] = [
            FieldPath.parse(text).getter() for text in group_by
        ]
        self._flush_test = None if conditional is None else conditional.predicate
        self._time = FieldPath.parse(event_timestamp).getter()
        self._clock = clock
        self._flush_at_end = flush_at_end
        self._series: dict[bytes, list[_Open]] = {}
        self._lock = asyncio.Lock()

    @property
    def series(self) -> int:
        return len(self._series)

    def windows(self) -> list[Any]:
        """The open windows as JSON values (``restore`` takes them back): a pipeline
        alert's judge keeps them across a restart (``runtime.alert_events``)."""
        return [
            [
                key.decode(),
                [
                    [w.start, w.end, w.base, w.value, w.tags, w.last_ms, w.count, w.total,
                     list(w.members.values())]
                    for w in windows
                ],
            ]
            for key, windows in self._series.items()
        ]  # fmt: skip

    def restore(self, saved: list[Any]) -> None:
        """The open windows ``windows`` gave, instead of the ones held."""
        series: dict[bytes, list[_Open]] = {}
        for key, windows in saved[:MAX_SERIES]:
            series[key.encode()] = [
                _Open(start, end, base, value, tags, last_ms, count, total, False,
                      {_member_key(member): member for member in members})
                for start, end, base, value, tags, last_ms, count, total, members in windows
            ]  # fmt: skip
        self._series = series

    def _now(self, context: RunContext) -> int:
        return context.now_ms if context.now_ms is not None else int(self._clock.now_ms())

    def _place(self, windows: list[_Open], at: int) -> int | None:
        """The start of the window an event at ``at`` opens, or None (it opens none)."""
        if self._tumbling:
            start = at - at % self._interval_ms
            if any(window.start == start for window in windows):
                return None
            return start
        if len(windows) >= MAX_OPEN_WINDOWS or any(
            at - self._slide_ms < window.start <= at for window in windows
        ):
            return None
        return at

    def _open(self, windows: list[_Open], opened: _Open) -> None:
        windows.append(opened)
        windows.sort(key=lambda window: window.start)

    def _at(self, event: Event, now: int) -> int:
        stamp = epoch_ms(self._time(event))
        if stamp is None or stamp > now + self._interval_ms:
            return now
        return stamp

    def _flushed(self, now: int, *, everything: bool) -> list[Event]:
        due: list[tuple[int, bytes, Event]] = []
        for key, windows in list(self._series.items()):
            kept: list[_Open] = []
            for window in windows:
                output = self._due(window, now, everything=everything)
                if output is None:
                    kept.append(window)
                else:
                    due.append((window.start, key, output))
            if kept:
                self._series[key] = kept
            else:
                del self._series[key]
        due.sort(key=lambda item: (item[0], item[1]))
        return [output for _, _, output in due]

    def _due(self, window: _Open, now: int, *, everything: bool) -> Event | None:
        """The window's event when it leaves now: its end has passed, or the flush
        condition holds for what it has folded (checked when it changed)."""
        if everything or window.end <= now:
            return self._output(window, now)
        if self._flush_test is None or not window.changed:
            return None
        window.changed = False
        output = self._output(window, now)
        return output if self._flush_test(output) else None

    def _output(self, window: _Open, now: int) -> Event:
        raise NotImplementedError


class MetricAggregator(_Windowed):
    """The running processor for the built-in operations; runs one batch at a time (a
    large batch in a worker thread, under the node's lock)."""

    async def run(self, events: list[Event], *, context: RunContext) -> NodeOutput:
        now = self._now(context)
        async with self._lock:
            return await on_batch(partial(self._run, now=now), events, context)

    def _run(self, events: list[Event], *, now: int) -> NodeOutput:
        out: list[Event] = []
        for event in events:
            try:
                folded = self._record(event, now)
            except Exception:  # _NotFolded, or any: one odd event never fails its batch
                folded = False
            if not folded:
                out.append(event)
        out.extend(self._flushed(now, everything=self._flush_at_end))
        return NodeOutput(out, {}, len(events))

    def _key(self, event: Event, metric: _Metric) -> bytes:
        if self._group_by:
            grouped = [get(event) for get in self._group_by]
            identity: Any = [None if value is MISSING else value for value in grouped]
        else:
            identity = event.get("tags")
        parts = [event.get("name"), event.get("namespace"), metric.kind, metric.value_type]
        return orjson.dumps([*parts, identity], option=orjson.OPT_SORT_KEYS, default=str)

    def _record(self, event: Event, now: int) -> bool:
        metric = _metric(event)
        if metric is None:
            return False
        key = self._key(event, metric)
        windows = self._series.get(key)
        if windows is None:
            if len(self._series) >= MAX_SERIES:
                return False
            windows = []
        at = self._at(event, now)
        tags = event.get("tags")
        if not isinstance(tags, dict):
            tags = None
        start = self._place(windows, at)
        folded = False
        for window in windows:
            if window.start <= at < window.end:
                _add(self._operation, metric.kind, metric.value_type, window, metric.value)
                window.count += 1
                window.last_ms = max(window.last_ms, at)
                window.changed = True
                if window.tags is not None:
                    window.tags = _shared(window.tags, tags)
                folded = True
        if start is not None:
            kept = None if tags is None else dict(tags)
            opened = _Open(start, start + self._interval_ms, event, None, kept, at)
            opened.value = _start(
                self._operation, metric.kind, metric.value_type, metric.value, opened
            )
            self._open(windows, opened)
        if folded or start is not None:
            self._series[key] = windows
            return True
        return False

    def _output(self, window: _Open, now: int) -> Event:
        base = window.base
        value_type = base["value"]["type"]
        result = _result(self._operation, value_type, window)
        out = {
            **base,
            "value": {**base["value"], "value": result},
            "timestamp": window.last_ms,
            "metadata": _metadata(base, window, now),
        }
        if window.tags is not None:
            out["tags"] = dict(window.tags)
        return out


class ScriptAggregator(ScriptUser, _Windowed):
    """The running processor for ``CUSTOM``: each window's events folded through the
    tenant's JavaScript function in the sandbox processes, ``fn(accum, event)``
    returning the new accumulated event; the window's first event is the first
    ``accum``. Series are the ``group_by`` values (without ``group_by``: one series),
    whatever the events are. A call that fails (throws, returns no object, runs past a
    limit) costs that window its event: the accumulated event stays as it was, the
    failure is logged and counted in ``errors``."""

    def __init__(
        self, *, script: Script, sandbox: Sandbox | None = None, name: str = "", **rest: Any
    ) -> None:
        ScriptUser.__init__(self, script, sandbox, name=name)
        _Windowed.__init__(self, **rest)

    async def run(self, events: list[Event], *, context: RunContext) -> NodeOutput:
        now = self._now(context)
        async with self._lock:
            out: list[Event] = []
            slots: list[Slot] = []
            held: list[_Open] = []
            steps: list[tuple[int, Event, int]] = []
            for event in events:
                if not self._plan(event, now, slots, held, steps):
                    out.append(event)
            try:
                if steps:
                    pairs = [(slot, event) for slot, event, _ in steps]
                    try:
                        outcomes = await self.sandbox.fold(self.script, slots, pairs, now)
                    except Exception as error:  # any (an accumulated event JSON cannot hold)
                        outcomes = [Outcome("failed", reason=str(error))] * len(steps)
                    self._apply(slots, held, steps, outcomes)
            finally:
                for window in held:
                    window.slot = None
            out.extend(self._flushed(now, everything=self._flush_at_end))
        return NodeOutput(out, {}, len(events))

    def _plan(
        self,
        event: Event,
        now: int,
        slots: list[Slot],
        held: list[_Open],
        steps: list[tuple[int, Event, int]],
    ) -> bool:
        """Places the event: a step for each open window holding its time, and the
        window it opens (its first accumulated event). False: it passes unchanged."""
        grouped = [get(event) for get in self._group_by]
        identity = [None if value is MISSING else value for value in grouped]
        key = orjson.dumps(identity, option=orjson.OPT_SORT_KEYS, default=str)
        windows = self._series.get(key)
        if windows is None:
            if len(self._series) >= MAX_SERIES:
                return False
            windows = self._series[key] = []
        at = self._at(event, now)
        start = self._place(windows, at)
        for window in windows:
            if window.start <= at < window.end:
                if window.slot is None:
                    window.slot = len(slots)
                    slots.append(Slot(window.base, window.count, window.start, window.end))
                    held.append(window)
                steps.append((window.slot, event, at))
        if start is not None:
            self._open(windows, _Open(start, start + self._interval_ms, event, None, None, at))
        return True

    def _apply(
        self,
        slots: list[Slot],
        held: list[_Open],
        steps: list[tuple[int, Event, int]],
        outcomes: list[Outcome],
    ) -> None:
        failed = 0
        first = ""
        for (slot, _, at), outcome in zip(steps, outcomes, strict=True):
            if outcome.kind == "event":
                window = held[slot]
                window.last_ms = max(window.last_ms, at)
                window.changed = True
            else:
                failed += 1
                first = first or outcome.reason
        for folded, window in zip(slots, held, strict=True):
            window.base = folded.accum
            window.count = folded.count
        self._failed("aggregate (CUSTOM)", failed, "not folded into a window", first)

    def _output(self, window: _Open, now: int) -> Event:
        return {**window.base, "metadata": _metadata(window.base, window, now)}


def _metadata(base: Event, window: _Open, now: int) -> dict[str, Any]:
    """The event's ``metadata`` with the window's ``aggregate``, as the platform writes it."""
    metadata = base.get("metadata")
    aggregate = {
        "event_count": window.count,
        "start_timestamp": window.start,
        "end_timestamp": window.end,
        "flush_timestamp": now,
    }
    return {**(metadata if isinstance(metadata, dict) else {}), "aggregate": aggregate}


def _shared(tags: dict[str, Any], other: dict[str, Any] | None) -> dict[str, Any]:
    """The tags both have with the same value."""
    if other is None:
        return {}
    if tags == other:
        return tags
    return {name: value for name, value in tags.items() if other.get(name, MISSING) == value}

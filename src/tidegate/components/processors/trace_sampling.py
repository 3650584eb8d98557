"""The ``trace-sampling`` processor: keeps whole traces, a share of them, by trace id.

``sample_type: head`` keeps one trace in ``rate`` (2-100,000; default 10), decided by
a hash of the trace id alone, so every span of a trace is kept or dropped together, in
any batch, worker or restart. ``sample_type: tail`` waits for the trace's root span (an
event without ``parent_span_id_field``, or with it empty), then takes the first of
``conditionals`` that any span of the trace matches and keeps the trace at that rule's
``rate`` (1 keeps all), by the same hash; a trace no rule matches is dropped. Spans
arriving after their trace was decided follow the decision.

An event without a trace id passes unchanged. ``trace_id_field`` defaults to
``.trace_id`` and ``parent_span_id_field`` to ``.parent_span_id``; both are stored and
answered, as the platform's Terraform provider reads them back (it reads them as
computed values). Each conditional gets an ``_output_name`` (the provider sends it empty
and reads it back): the rule's name, not an output.

Tail state, per worker: at most ``MAX_TRACES`` traces held, ``MAX_SPANS`` spans each; a
trace held longer than ``TRACE_TIMEOUT_MS`` (processing time, checked when a batch
arrives), pushed out by a newer trace, or past its span cap is decided on what it has.
At most ``MAX_DECIDED`` decisions are remembered (least recent out).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tidegate.components.base import (
    BuildContext,
    Component,
    Event,
    NodeOutput,
    NodeRef,
    RunContext,
)
from tidegate.components.processors.kit import (
    FieldText,
    OutputName,
    PerEventProcessor,
    processing_clock,
    with_output_names,
)
from tidegate.processing.conditions import Condition
from tidegate.processing.fields import MISSING, FieldPath

__all__ = ["COMPONENT", "TraceSamplingConfig", "keeps_trace"]

MAX_TRACES: Final = 10_000
MAX_SPANS: Final = 1_000
MAX_DECIDED: Final = 100_000
TRACE_TIMEOUT_MS: Final = 30_000
DEFAULT_RATE: Final = 10

Rate = Annotated[int, Field(strict=True, ge=1, le=100_000)]


class TailRule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    conditional: Condition
    rate: Rate
    output_name: OutputName | Literal[""] = Field(default="", alias="_output_name")


class TraceSamplingConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    sample_type: Literal["head", "tail"]
    trace_id_field: FieldText = ".trace_id"
    rate: Annotated[int, Field(strict=True, ge=2, le=100_000)] | None = None
    parent_span_id_field: FieldText | None = None
    conditionals: Annotated[list[TailRule], Field(max_length=50)] | None = None

    @model_validator(mode="after")
    def _per_sample_type(self) -> TraceSamplingConfig:
        if self.sample_type == "head":
            if self.parent_span_id_field is not None or self.conditionals is not None:
                raise ValueError("parent_span_id_field and conditionals are for tail sampling")
        else:
            if self.rate is not None:
                raise ValueError("rate is for head sampling (tail: each conditional's rate)")
            if not self.conditionals:
                raise ValueError("tail sampling needs at least one conditional")
        return self

    @property
    def output_names(self) -> list[str]:
        """Each tail rule's name: as sent, else ``rule-<n>`` (distinct)."""
        given = {rule.output_name for rule in self.conditionals or ()}
        names: list[str] = []
        for index, rule in enumerate(self.conditionals or ()):
            name = rule.output_name
            if not name:
                name, suffix = f"rule-{index + 1}", 2
                while name in given or name in names:
                    name, suffix = f"rule-{index + 1}-{suffix}", suffix + 1
            names.append(name)
        return names


def keeps_trace(trace_id: object, rate: int) -> bool:
    """One trace in ``rate``, by the trace id only (the same answer everywhere)."""
    if rate <= 1:
        return True
    text = trace_id if isinstance(trace_id, str) else repr(trace_id)
    digest = hashlib.blake2b(text.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % rate == 0


def _trace_id(get: Any, event: Event) -> object | None:
    value: object = get(event)
    if value is MISSING or value is None or value == "":
        return None
    return value


class _Head:
    def __init__(self, config: TraceSamplingConfig) -> None:
        self._get = FieldPath.parse(config.trace_id_field).getter()
        self._rate = config.rate or DEFAULT_RATE

    def __call__(self, event: Event) -> Event | None:
        trace_id = _trace_id(self._get, event)
        if trace_id is None or keeps_trace(trace_id, self._rate):
            return event
        return None


class _Held:
    __slots__ = ("since_ms", "spans")

    def __init__(self, since_ms: int) -> None:
        self.since_ms = since_ms
        self.spans: list[Event] = []


class TailSampler:
    """Holds each trace's spans until its root span, then keeps or drops them all."""

    def __init__(self, config: TraceSamplingConfig, clock: Any, *, simulation: bool) -> None:
        self._trace = FieldPath.parse(config.trace_id_field).getter()
        self._parent = FieldPath.parse(config.parent_span_id_field or ".parent_span_id").getter()
        self._rules = [
            (rule.conditional.predicate, rule.rate) for rule in config.conditionals or ()
        ]
        self._clock = clock
        self._simulation = simulation
        self._held: OrderedDict[object, _Held] = OrderedDict()
        self._decided: OrderedDict[object, bool] = OrderedDict()

    @property
    def held_traces(self) -> int:
        return len(self._held)

    def _decide(self, trace_id: object, spans: list[Event]) -> bool:
        keep = False
        for predicate, rate in self._rules:
            if any(predicate(span) for span in spans):
                keep = keeps_trace(trace_id, rate)
                break
        self._decided[trace_id] = keep
        if len(self._decided) > MAX_DECIDED:
            self._decided.popitem(last=False)
        return keep

    def _release(self, trace_id: object, main: list[Event], dropped: list[Event]) -> None:
        held = self._held.pop(trace_id)
        (main if self._decide(trace_id, held.spans) else dropped).extend(held.spans)

    async def run(self, events: list[Event], *, context: RunContext) -> NodeOutput:
        now = context.now_ms if context.now_ms is not None else self._clock.now_ms()
        main: list[Event] = []
        dropped: list[Event] = []
        for trace_id in [t for t, h in self._held.items() if now - h.since_ms >= TRACE_TIMEOUT_MS]:
            self._release(trace_id, main, dropped)
        for event in events:
            trace_id = _trace_id(self._trace, event)
            if trace_id is None:
                main.append(event)
                continue
            try:
                hash(trace_id)
            except TypeError:
                main.append(event)
                continue
            decided = self._decided.get(trace_id)
            if decided is not None:
                self._decided.move_to_end(trace_id)
                (main if decided else dropped).append(event)
                continue
            held = self._held.get(trace_id)
            if held is None:
                held = self._held[trace_id] = _Held(now)
                if len(self._held) > MAX_TRACES:
                    self._release(next(iter(self._held)), main, dropped)
            held.spans.append(event)
            if _trace_id(self._parent, event) is None or len(held.spans) >= MAX_SPANS:
                self._release(trace_id, main, dropped)
        if self._simulation:  # a simulation shows every decision at its end
            for trace_id in list(self._held):
                self._release(trace_id, main, dropped)
        return NodeOutput(main, {}, len(events), dropped)


def _build(config: TraceSamplingConfig, context: BuildContext, _node: NodeRef) -> Any:
    if config.sample_type == "head":
        return PerEventProcessor(_Head(config), name="trace-sampling")
    return TailSampler(config, processing_clock(context), simulation=context.simulation)


def _stored(config: TraceSamplingConfig, user_config: dict[str, Any]) -> dict[str, Any]:
    """What the provider reads back as computed: the fields' defaults, the head rate and
    each rule's name."""
    stored = {**user_config, "trace_id_field": config.trace_id_field}
    if config.sample_type == "head":
        return {**stored, "rate": config.rate or DEFAULT_RATE}
    stored["parent_span_id_field"] = config.parent_span_id_field or ".parent_span_id"
    return with_output_names(stored, "conditionals", config.output_names)


COMPONENT: Component[TraceSamplingConfig] = Component(
    kind="processor",
    type="trace-sampling",
    config_model=TraceSamplingConfig,
    build=_build,
    describe="Keeps whole traces: one in `rate` by a hash of the trace id (head), or by "
    "the first conditional a trace matches once its root span arrives (tail)",
    stored=_stored,
)

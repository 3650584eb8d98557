"""What most processors share: a field-path config type, and a runner applying a
per-event function to a batch without ever failing the batch.

A per-event function returns the event to emit (a copy when changed), None when the
event is discarded, or ``(output name, event)`` to send it to a named output. Should it
raise on an odd event all the same, that event passes unchanged on the main output
(counted in ``errors``, logged once per batch): one event never fails its neighbours,
and a retry would fail the same way (a poison batch).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from functools import partial
from typing import Annotated, Any, Final, TypeVar

from pydantic import AfterValidator, Field

from tidegate.clock import WallClock
from tidegate.components.base import BuildContext, Event, NodeOutput, RunContext
from tidegate.processing.fields import FieldPath

__all__ = [
    "MAX_FIELDS",
    "EventFn",
    "FieldText",
    "OutputName",
    "PerEventProcessor",
    "WallClock",
    "lift_nested",
    "lift_options",
    "on_batch",
    "parse_path",
    "processing_clock",
    "with_output_names",
]

log = logging.getLogger("tidegate.runtime.processors")

MAX_FIELDS: Final = 100
"""Fields one processor may name (drop-fields, dedupe, ...)."""


def parse_path(text: str) -> str:
    FieldPath.parse(text)  # raises FieldPathError (a ValueError) naming the problem
    return text


def lift_options(data: Any) -> Any:
    """A ``model_validator(mode="before")`` body: the platform's Terraform provider
    wraps some settings in ``options{}`` (``{"fields": [...], "options":
    {"delimiter": "_"}}``); they are read as if given beside ``fields``. Only the
    configuration model sees this: what was sent is stored and read back."""
    return lift_nested(data, "options")


def lift_nested(data: Any, key: str) -> Any:
    """``data`` with the settings of the object at ``key`` moved beside the others
    (given both inside and beside: a ValueError)."""
    if not isinstance(data, dict) or not isinstance(data.get(key), dict):
        return data
    lifted = {name: value for name, value in data.items() if name != key}
    for name, value in data[key].items():
        if name in lifted:
            raise ValueError(f"{name}: given both beside and inside {key}")
        lifted[name] = value
    return lifted


FieldText = Annotated[str, Field(min_length=1, max_length=1024), AfterValidator(parse_path)]
"""An event field path as the client wrote it (``.app``, ``meta.user.id``)."""

OutputName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")]
"""A processor's named output (``<node id>.<name>``)."""


def with_output_names(
    user_config: dict[str, Any], items: str, names: Sequence[str]
) -> dict[str, Any]:
    """``user_config`` with each item of the list at ``items`` (a route's conditionals,
    parse-sequentially's parsers) given its output name as ``_output_name``, which the
    platform's clients read back."""
    named = [
        {**entry, "_output_name": name} if isinstance(entry, dict) else entry
        for entry, name in zip(user_config[items], names, strict=True)
    ]
    return {**user_config, items: named}


EventFn = Callable[[Event], "Event | tuple[str, Event] | None"]
R = TypeVar("R")


async def on_batch(work: Callable[[list[Event]], R], events: list[Event], context: RunContext) -> R:
    """``work(events)``: in a worker thread when the context offloads and the batch is
    large (processors' work is pure CPU), else right here."""
    if context.offload is None:
        return work(events)
    return await context.offload(partial(work, events), work=len(events))


class PerEventProcessor:
    """Runs ``fn`` over each event; ``outputs`` are the named outputs it may emit to."""

    def __init__(self, fn: EventFn, *, outputs: tuple[str, ...] = (), name: str = "") -> None:
        self._fn = fn
        self._outputs = outputs
        self._name = name
        self.errors = 0

    async def run(self, events: list[Event], *, context: RunContext) -> NodeOutput:
        return await on_batch(self._run, events, context)

    def _run(self, events: list[Event]) -> NodeOutput:
        main: list[Event] = []
        named: dict[str, list[Event]] = {name: [] for name in self._outputs}
        discarded: list[Event] = []
        fn = self._fn
        failed = 0
        first: Exception | None = None
        for event in events:
            try:
                result: Any = fn(event)
            except Exception as error:  # any: one event never fails its batch
                failed += 1
                first = first or error
                main.append(event)
                continue
            if result is None:
                discarded.append(event)
            elif isinstance(result, tuple):
                named.setdefault(result[0], []).append(result[1])
            else:
                main.append(result)
        if failed:
            self.errors += failed
            log.warning(
                "%s: %d event(s) passed unchanged after an error: %s: %s",
                self._name or "processor",
                failed,
                type(first).__name__,
                first,
            )
        return NodeOutput(main, named, len(events), discarded)


def processing_clock(context: BuildContext) -> Any:
    """The injected clock, or the wall clock (epoch ms) for windows and group ages."""
    return context.clock or WallClock()

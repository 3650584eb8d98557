"""The ``js-script`` processor (the platform's Script Execution processor): each event
goes through the tenant's JavaScript function.

``script`` defines ``processEvent(message, metadata, timestamp, annotations)`` (or
exactly one function, by any name, as the platform allows). ``message`` is the event;
``metadata`` its ``metadata`` object (a fresh ``{}`` when it has none: what the script
puts there is kept as the event's ``metadata``); ``timestamp`` its ``timestamp`` (else
the batch's time, epoch ms); ``annotations`` an empty object (tidegate annotates
nothing). What it returns is the event downstream: an object as it is, any other value
as ``{"message": value}``; ``null`` drops the event. An event whose call throws, returns
``undefined`` or runs past a limit passes unchanged (logged, counted in ``errors``).

The script runs in sandbox processes (``processors.javascript``, QuickJS),
loaded once per process and revision of its text; the limits are
``javascript.Limits``. Saving a script loads it there once: a syntax error, a top level
that throws or runs past its limits, or no function to call is a 400 on
``/user_config/script``.
"""

from __future__ import annotations

from typing import Annotated, Final

from pydantic import BaseModel, ConfigDict, Field

from tidegate.clock import now_ms
from tidegate.components.base import (
    BuildContext,
    Component,
    Event,
    NodeOutput,
    NodeRef,
    RunContext,
    config_refused,
)
from tidegate.components.processors.javascript import Script, ScriptUser, shared_sandbox
from tidegate.kit.destination_guard import DestinationPolicy

__all__ = ["COMPONENT", "JsScript", "JsScriptConfig"]


MAX_SCRIPT: Final = 65_536
"""Characters of one script."""


class JsScriptConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    script: Annotated[str, Field(min_length=1, max_length=MAX_SCRIPT)]


class JsScript(ScriptUser):
    """The running processor: one script, sent with each batch to a sandbox process
    (which loads it once)."""

    async def run(self, events: list[Event], *, context: RunContext) -> NodeOutput:
        if not events:
            return NodeOutput([], {}, 0)
        at = context.now_ms if context.now_ms is not None else now_ms()
        outcomes = await self.sandbox.run(self.script, events, at)
        main: list[Event] = []
        discarded: list[Event] = []
        failed = 0
        first = ""
        for event, outcome in zip(events, outcomes, strict=True):
            if outcome.kind == "event" and outcome.event is not None:
                main.append(outcome.event)
            elif outcome.kind == "dropped":
                discarded.append(event)
            else:
                failed += 1
                first = first or outcome.reason
                main.append(event)
        self._failed("js-script", failed, "passed unchanged", first)
        return NodeOutput(main, {}, len(events), discarded)


def _build(config: JsScriptConfig, _context: BuildContext, node: NodeRef) -> JsScript:
    return JsScript(Script.of(config.script), name=f"{node.node_id} of pipeline {node.pipeline_id}")


async def _vet(config: JsScriptConfig, _policy: DestinationPolicy) -> None:
    reason = await shared_sandbox().check(Script.of(config.script))
    if reason is None:
        return
    raise config_refused(
        "/script",
        f"is not valid JavaScript: {reason}",
        keyword="format",
        params={"format": "javascript"},
    )


COMPONENT: Component[JsScriptConfig] = Component(
    kind="processor",
    type="js-script",
    config_model=JsScriptConfig,
    build=_build,
    vet=_vet,
    describe="Runs each event through the `script`'s JavaScript function (processEvent); "
    "null drops the event",
)

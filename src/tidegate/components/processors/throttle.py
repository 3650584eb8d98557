"""The ``throttle`` processor: the component around ``tidegate.processing.throttle``
(which keeps the config / processor / state / clock split).

It needs the account's ``throttle-processor`` feature: without it, the node passes
every event on its main output and its ``dropped`` output is empty. A batch holding a
value the throttle cannot read passes whole (fails open, logged) rather than failing
on every retry.
"""

from __future__ import annotations

import logging
from typing import Final

from tidegate.components.base import (
    DROPPED,
    BuildContext,
    Component,
    Event,
    Needs,
    NodeOutput,
    NodeRef,
    RunContext,
)
from tidegate.processing.throttle import ThrottleConfig, ThrottleProcessor

__all__ = ["COMPONENT", "THROTTLE_FEATURE", "ThrottleNode"]

THROTTLE_FEATURE: Final = "throttle-processor"
log = logging.getLogger("tidegate.runtime")


class ThrottleNode:
    def __init__(self, processor: ThrottleProcessor) -> None:
        self.processor = processor

    async def run(self, events: list[Event], *, context: RunContext) -> NodeOutput:
        try:
            result = await self.processor.process(events)
        except (ValueError, TypeError, OverflowError) as error:
            # One event with a value the throttle cannot read (a time field of 5,000
            # digits) must not fail its batch on every retry (a poison batch).
            log.warning("throttle failed open for a batch: %s: %s", type(error).__name__, error)
            return NodeOutput(events, {DROPPED: []}, len(events))
        return NodeOutput(result.passed, {DROPPED: result.dropped}, len(events))


def _build(config: ThrottleConfig, context: BuildContext, node: NodeRef) -> ThrottleNode:
    store = None if context.simulation else context.throttle_store(node)
    return ThrottleNode(
        ThrottleProcessor(
            config,
            store=store,
            clock=context.clock,
            budget=None if context.simulation else context.throttle_budget,
        )
    )


def _outputs(_config: ThrottleConfig) -> list[str]:
    return [DROPPED]


COMPONENT: Component[ThrottleConfig] = Component(
    kind="processor",
    type="throttle",
    config_model=ThrottleConfig,
    build=_build,
    describe="At most `threshold` events per `window_ms` per `key_field`; the others "
    "go to `<id>.dropped`",
    needs=Needs(feature=THROTTLE_FEATURE),
    outputs=_outputs,
)

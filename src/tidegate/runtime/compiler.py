"""A stored pipeline compiled into running nodes, and the graph run over a batch.

Nodes run in topological order (every node after its inputs). A node's input is the
concatenation of its inputs' outputs, in the order its ``inputs`` list them; an input
``<throttle>.dropped`` takes the throttle's discarded events. Processors never mutate
events, so one event object may travel down several branches (no copies are made: a
batch costs one list of references per node, not a copy of its events).

Given an ``offload``, a filter over a large batch runs in a worker thread (its
predicates are pure), so a big request does not stall the event loop.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from tidegate.pipelines.dataplane import PipelineGraph
from tidegate.pipelines.graph import DROPPED, split_input
from tidegate.pipelines.node_configs import FilterConfig, config_model
from tidegate.processing.throttle import ThrottleConfig, ThrottleProcessor

__all__ = [
    "CompiledPipeline",
    "NodeOutput",
    "Offload",
    "PipelineBroken",
    "RunningNode",
    "ThrottleFactory",
    "compile_pipeline",
    "config_fingerprint",
    "run_graph",
]

Event = dict[str, Any]
T = TypeVar("T")
log = logging.getLogger("tidegate.runtime")


class Offload(Protocol):
    """Runs ``function`` in a worker thread when ``work`` (events, bytes) is large."""

    def __call__(self, function: Callable[[], T], *, work: int) -> Awaitable[T]: ...


class PipelineBroken(Exception):
    """A stored node configuration no longer validates (it did when it was saved)."""


@dataclass(frozen=True, slots=True)
class NodeOutput:
    main: list[Event]
    dropped: list[Event] | None = None
    received: int = 0


_EMPTY = NodeOutput([], None, 0)


class Processor(Protocol):
    async def run(
        self, events: list[Event], *, throttle_enabled: bool, offload: Offload | None = None
    ) -> NodeOutput: ...


class FilterProcessor:
    """``allow`` keeps the events matching the condition, ``drop`` discards them."""

    def __init__(self, config: FilterConfig) -> None:
        self._predicate = config.condition.predicate
        self._keep_matching = config.action == "allow"

    async def run(
        self, events: list[Event], *, throttle_enabled: bool, offload: Offload | None = None
    ) -> NodeOutput:
        if offload is None:
            kept = self._kept(events)
        else:
            kept = await offload(partial(self._kept, events), work=len(events))
        return NodeOutput(kept, None, len(events))

    def _kept(self, events: list[Event]) -> list[Event]:
        predicate, keep = self._predicate, self._keep_matching
        return [event for event in events if bool(predicate(event)) is keep]


class ThrottleNode:
    """A running Throttle. Without the account's ``throttle-processor`` feature it lets
    every event through untouched (fails open) and its ``dropped`` output is empty."""

    def __init__(self, processor: ThrottleProcessor) -> None:
        self.processor = processor

    async def run(
        self, events: list[Event], *, throttle_enabled: bool, offload: Offload | None = None
    ) -> NodeOutput:
        if not throttle_enabled:
            return NodeOutput(events, [], len(events))
        try:
            result = await self.processor.process(events)
        except (ValueError, TypeError, OverflowError) as error:
            # One event with a value the throttle cannot read (a time field of 5,000
            # digits) must not fail its batch on every retry (a poison batch). The
            # batch passes, as the throttle fails open when Redis is unreachable.
            log.warning("throttle failed open for a batch: %s: %s", type(error).__name__, error)
            return NodeOutput(events, [], len(events))
        return NodeOutput(result.passed, result.dropped, len(events))


ThrottleFactory = Callable[[str, str, str, ThrottleConfig], ThrottleProcessor]
"""``(pipeline_id, node_id, config fingerprint, config)`` -> the running processor."""


@dataclass(frozen=True, slots=True)
class RunningNode:
    id: str
    kind: str
    type: str
    title: str | None
    inputs: tuple[tuple[str, str | None], ...]
    gateway_route_id: str | None
    config: BaseModel
    fingerprint: str
    processor: Processor | None = None


@dataclass(frozen=True, slots=True)
class CompiledPipeline:
    pipeline_id: str
    account_id: str
    revision: int
    nodes: tuple[RunningNode, ...]
    has_throttle: bool = field(default=False)

    def destinations(self, type_: str | None = None) -> list[RunningNode]:
        return [
            node
            for node in self.nodes
            if node.kind == "destination" and (type_ is None or node.type == type_)
        ]


def config_fingerprint(kind: str, type_: str, user_config: dict[str, Any]) -> str:
    """Identifies a node's configuration: equal JSON (any key order) gives equal text."""
    canonical = orjson.dumps([kind, type_, user_config], option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(canonical).hexdigest()


def compile_pipeline(graph: PipelineGraph, *, throttle_for: ThrottleFactory) -> CompiledPipeline:
    nodes: list[RunningNode] = []
    for node in graph.nodes:
        try:
            config = config_model(node.kind, node.type).model_validate(node.user_config)
        except (KeyError, ValidationError) as error:
            raise PipelineBroken(
                f"pipeline {graph.pipeline_id}: node {node.id} ({node.kind} {node.type}) "
                f"cannot run: {error}"
            ) from None
        fingerprint = config_fingerprint(node.kind, node.type, node.user_config)
        processor: Processor | None = None
        if isinstance(config, ThrottleConfig):
            processor = ThrottleNode(throttle_for(graph.pipeline_id, node.id, fingerprint, config))
        elif isinstance(config, FilterConfig):
            processor = FilterProcessor(config)
        nodes.append(
            RunningNode(
                id=node.id,
                kind=node.kind,
                type=node.type,
                title=node.title,
                inputs=tuple(split_input(ref) for ref in node.inputs),
                gateway_route_id=node.gateway_route_id,
                config=config,
                fingerprint=fingerprint,
                processor=processor,
            )
        )
    return CompiledPipeline(
        pipeline_id=graph.pipeline_id,
        account_id=graph.account_id,
        revision=graph.revision,
        nodes=tuple(nodes),
        has_throttle=any(node.type == "throttle" for node in nodes),
    )


def _incoming(node: RunningNode, outputs: dict[str, NodeOutput]) -> list[Event]:
    """A node's input; the upstream list itself when it has a single input (nodes never
    modify the lists they are given)."""
    parts: list[list[Event]] = []
    for upstream_id, output in node.inputs:
        upstream = outputs.get(upstream_id, _EMPTY)
        part = (upstream.dropped or []) if output == DROPPED else upstream.main
        if part:
            parts.append(part)
    if len(parts) == 1:
        return parts[0]
    return [event for part in parts for event in part]


async def run_graph(
    pipeline: CompiledPipeline,
    events: Sequence[Event],
    *,
    gateway_route_id: str | None,
    throttle_enabled: bool,
    offload: Offload | None = None,
) -> dict[str, NodeOutput]:
    """Every node's output for one batch, by node id; a destination's "output" is what
    it receives. Sources emit the batch when bound to ``gateway_route_id`` (every source
    does when it is None, as in a simulation)."""
    outputs: dict[str, NodeOutput] = {}
    batch = events if isinstance(events, list) else list(events)
    for node in pipeline.nodes:
        if node.kind == "source":
            emits = gateway_route_id is None or node.gateway_route_id == gateway_route_id
            outputs[node.id] = NodeOutput(batch if emits else [], None, 0)
            continue
        incoming = _incoming(node, outputs)
        if node.processor is None:
            outputs[node.id] = NodeOutput(incoming, None, len(incoming))
        elif incoming:
            outputs[node.id] = await node.processor.run(
                incoming, throttle_enabled=throttle_enabled, offload=offload
            )
        else:
            dropped: list[Event] | None = [] if node.type == "throttle" else None
            outputs[node.id] = NodeOutput([], dropped, 0)
    return outputs

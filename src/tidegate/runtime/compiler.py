"""A stored pipeline compiled into running nodes, and the graph run over a batch.

Every node's component comes from the registry (``components.catalogue``): the
compiler validates the stored ``user_config`` with the component's model and builds
its runtime, reusing the runtime built for the same node and configuration before
(``NodeRuntimes``), so that a throttle keeps its windows and an http destination its
connections across recompiles.

Nodes run in topological order (every node after its inputs). A node's input is the
concatenation of its inputs' outputs, in the order its ``inputs`` list them; an input
``<node>.<name>`` takes that node's output ``name`` (a throttle's ``dropped``, a
route's outputs). Processors never mutate events, so one event object may travel down
several branches (no copies are made).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from tidegate.components.base import (
    BuildContext,
    Component,
    Event,
    NodeOutput,
    NodeRef,
    Offload,
    ProcessorRuntime,
    RunContext,
)
from tidegate.components.catalogue import REGISTRY
from tidegate.components.registry import Registry, UnknownComponent
from tidegate.pipelines.dataplane import PipelineGraph
from tidegate.pipelines.graph import split_input

__all__ = [
    "CompiledPipeline",
    "NodeOutput",
    "NodeRuntimes",
    "Offload",
    "PipelineBroken",
    "RunningNode",
    "compile_pipeline",
    "config_fingerprint",
    "run_graph",
]

T = TypeVar("T")
log = logging.getLogger("tidegate.runtime")


class PipelineBroken(Exception):
    """A stored node configuration no longer validates (it did when it was saved)."""


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
    component: Component[Any]
    runtime: Any = None
    outputs: tuple[str, ...] = ()

    @property
    def processor(self) -> ProcessorRuntime | None:
        return self.runtime if self.kind == "processor" else None


@dataclass(frozen=True, slots=True)
class CompiledPipeline:
    pipeline_id: str
    account_id: str
    revision: int
    nodes: tuple[RunningNode, ...]
    features: frozenset[str] = field(default=frozenset())
    """Account features some node needs (asked once per request, only when needed)."""

    def destinations(self) -> list[RunningNode]:
        return [node for node in self.nodes if node.kind == "destination"]

    @property
    def taken_outputs(self) -> frozenset[tuple[str, str | None]]:
        """``(node id, output name or None for the main one)`` pairs some node reads."""
        return frozenset(ref for node in self.nodes for ref in node.inputs)


class NodeRuntimes:
    """Built runtimes of one worker by ``(pipeline_id, node_id)``, kept while the node's
    configuration is unchanged (a throttle's windows, an http destination's slots).

    A runtime with an ``aclose`` (a Kafka producer) is closed when it is replaced or
    forgotten (in a task: the cache changes synchronously), and by ``aclose``."""

    def __init__(self) -> None:
        self._running: dict[tuple[str, str], tuple[str, Any]] = {}
        self._closing: set[asyncio.Task[None]] = set()

    def get(self, node: NodeRef, build: Callable[[], T]) -> T:
        key = (node.pipeline_id, node.node_id)
        found = self._running.get(key)
        if found is not None and found[0] == node.fingerprint:
            runtime: T = found[1]
            return runtime
        built = build()
        self._running[key] = (node.fingerprint, built)
        if found is not None:
            self._retire(found[1])
        return built

    def keep_only(self, pipeline_id: str, node_ids: set[str]) -> None:
        """Forget the pipeline's runtimes whose node is no longer among ``node_ids``."""
        for key in [key for key in self._running if key[0] == pipeline_id]:
            if key[1] not in node_ids:
                self._retire(self._running.pop(key)[1])

    def _retire(self, runtime: Any) -> None:
        close = getattr(runtime, "aclose", None)
        if close is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop: nothing was started
            return
        task = loop.create_task(_closed(close))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def aclose(self) -> None:
        """Close every runtime that has an ``aclose`` (the worker stops)."""
        running, self._running = list(self._running.values()), {}
        for _fingerprint, runtime in running:
            self._retire(runtime)
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)

    def __len__(self) -> int:
        return len(self._running)


async def _closed(close: Callable[[], Awaitable[None]]) -> None:
    try:
        await close()
    except Exception:  # any: a runtime that fails to close is only logged
        log.exception("closing a node runtime failed")


def config_fingerprint(kind: str, type_: str, user_config: dict[str, Any]) -> str:
    """Identifies a node's configuration: equal JSON (any key order) gives equal text."""
    canonical = orjson.dumps([kind, type_, user_config], option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(canonical).hexdigest()


def compile_pipeline(
    graph: PipelineGraph,
    *,
    context: BuildContext | None = None,
    runtimes: NodeRuntimes | None = None,
    registry: Registry = REGISTRY,
) -> CompiledPipeline:
    """Without ``runtimes`` every runtime is built afresh (a simulation)."""
    context = context or BuildContext(simulation=True)
    nodes: list[RunningNode] = []
    for node in graph.nodes:
        try:
            component = registry.get(node.kind, node.type)
            config = component.config_model.model_validate(node.user_config)
        except (UnknownComponent, KeyError, ValidationError) as error:
            raise PipelineBroken(
                f"pipeline {graph.pipeline_id}: node {node.id} ({node.kind} {node.type}) "
                f"cannot run: {_reason(error)}"
            ) from None
        fingerprint = config_fingerprint(node.kind, node.type, node.user_config)
        ref = NodeRef(graph.pipeline_id, graph.account_id, node.id, fingerprint)

        def build(
            component: Component[Any] = component, config: BaseModel = config, ref: NodeRef = ref
        ) -> Any:
            return component.build(config, context, ref)

        runtime = build() if runtimes is None else runtimes.get(ref, build)
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
                component=component,
                runtime=runtime,
                outputs=tuple(component.outputs(config)),
            )
        )
    return CompiledPipeline(
        pipeline_id=graph.pipeline_id,
        account_id=graph.account_id,
        revision=graph.revision,
        nodes=tuple(nodes),
        features=frozenset(
            node.component.needs.feature for node in nodes if node.component.needs.feature
        ),
    )


def _reason(error: Exception) -> str:
    """Without the values (a configuration may hold a key that must not be logged)."""
    if isinstance(error, ValidationError):
        return "; ".join(
            f"{'.'.join(map(str, item['loc']))}: {item['msg']}"
            for item in error.errors(include_input=False, include_url=False)
        )
    return str(error)


def incoming(node: RunningNode, outputs: Mapping[str, NodeOutput]) -> list[Event]:
    """A node's input; the upstream list itself when it has a single input (nodes never
    modify the lists they are given)."""
    parts: list[list[Event]] = []
    for upstream_id, output in node.inputs:
        upstream = outputs.get(upstream_id)
        part = upstream.output(output) if upstream is not None else []
        if part:
            parts.append(part)
    if len(parts) == 1:
        return parts[0]
    return [event for part in parts for event in part]


def _idle(node: RunningNode, events: list[Event]) -> NodeOutput:
    """The output of a node that does not run: events pass, other outputs are empty."""
    return NodeOutput(events, {name: [] for name in node.outputs}, len(events))


async def run_graph(
    pipeline: CompiledPipeline,
    events: Sequence[Event],
    *,
    gateway_route_id: str | None,
    features: frozenset[str] = frozenset(),
    offload: Offload | None = None,
    source_events: Mapping[str, list[Event]] | None = None,
) -> dict[str, NodeOutput]:
    """Every node's output for one batch, by node id; a destination's "output" is what
        it receives. Sources emit the batch when bound to ``gateway_route_id`` (every source
        does when it is None, as in a simulation); with ``source_events``, each source emits its
    own events (by node id: what its component made of the request). A processor whose
    component needs a
        feature missing from ``features`` passes every event on its main output."""
    outputs: dict[str, NodeOutput] = {}
    batch = events if isinstance(events, list) else list(events)
    context = RunContext(offload=offload, features=features)
    for node in pipeline.nodes:
        if node.kind == "source":
            if source_events is not None:
                outputs[node.id] = NodeOutput(source_events.get(node.id, []), {}, 0)
                continue
            emits = gateway_route_id is None or node.gateway_route_id == gateway_route_id
            outputs[node.id] = NodeOutput(batch if emits else [], {}, 0)
            continue
        given = incoming(node, outputs)
        processor = node.processor
        needed = node.component.needs.feature
        if processor is None or not given or (needed is not None and needed not in features):
            outputs[node.id] = _idle(node, given)
        else:
            outputs[node.id] = await processor.run(given, context=context)
    return outputs

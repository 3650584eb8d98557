"""What one request (a gateway request, a pull, a demo tick, a batch of ingested lines)
hands to the destinations of its pipelines. A module of its own: the runtime delivers
it, and the schedulers the runtime owns (pull sources, demo logs, the ingestion feed)
build it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tidegate.components.base import Component, Parcel
from tidegate.runtime.compiler import CompiledPipeline, NodeOutput


@dataclass(slots=True)
class Delivery:
    """What one request hands to destinations, by component (each component delivers
    all its parcels of the request at once)."""

    parcels: dict[Component[Any], list[Parcel]] = field(default_factory=dict)

    def add(self, pipeline: CompiledPipeline, outputs: dict[str, NodeOutput]) -> None:
        for node in pipeline.destinations():
            events = outputs[node.id].main
            if not events or node.component.deliver is None:
                continue
            self.parcels.setdefault(node.component, []).append(
                Parcel(pipeline.pipeline_id, pipeline.account_id, node.id, node.runtime, events)
            )

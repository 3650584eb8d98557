"""Request and response models of the simulation endpoints."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field

from tidegate.api.request_model import RequestModel

# No count cap of its own: the body limit of the management API (1 MiB by default)
# bounds a simulation; a schema cap would only turn oversized bodies into 413s.
Events = Annotated[list[dict[str, Any]], Field(description="Sample events (JSON objects)")]


class SimulatePipeline(RequestModel):
    events: Events


class ProcessorToSimulate(RequestModel):
    type: str = Field(description="A processor type (`GET` the API document for the list)")
    user_config: dict[str, Any]


class SimulateProcessor(RequestModel):
    processor: ProcessorToSimulate
    events: Events


class SimulatedNode(BaseModel):
    id: str
    kind: str
    type: str
    title: str | None
    received: int = Field(description="Events the node received (0 for a source)")
    output: list[dict[str, Any]] = Field(
        description="What the node emits; for a destination, what it would store or send"
    )
    dropped: list[dict[str, Any]] | None = Field(
        description="A throttle's second output (the events it discards); null otherwise"
    )
    outputs: dict[str, list[dict[str, Any]]] = Field(
        default_factory=dict,
        description="The node's outputs beside its main one, by name (a throttle's "
        "`dropped`, a route's outputs and `_unmatched`); input them as `<id>.<name>`",
    )


class PipelineSimulation(BaseModel):
    pipeline_id: str
    revision: int
    throttle_enabled: bool = Field(
        description="False when the account lacks the `throttle-processor` feature: "
        "throttles then pass every event, as they do on the live data plane"
    )
    nodes: list[SimulatedNode] = Field(description="Every node, in run order")


class ProcessorSimulation(BaseModel):
    type: str
    received: int
    output: list[dict[str, Any]]
    dropped: list[dict[str, Any]] = Field(
        description="Events the processor discards (a throttle's `dropped` output, or "
        "those a filter removes)"
    )
    outputs: dict[str, list[dict[str, Any]]] = Field(
        default_factory=dict,
        description="Other named outputs (a route's outputs and `_unmatched`)",
    )

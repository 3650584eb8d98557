"""Request and response models of the simulation endpoints."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from tidegate.api.request_model import RequestModel

# No count cap of its own: the body limit of the management API (1 MiB by default)
# bounds a simulation; a schema cap would only turn oversized bodies into 413s.
Events = Annotated[list[dict[str, Any]], Field(description="Sample events (JSON objects)")]


class SimulatePipeline(RequestModel):
    events: Events


class ProcessorToSimulate(RequestModel):
    type: Literal["throttle", "filter"]
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


class PipelineSimulation(BaseModel):
    pipeline_id: str
    revision: int
    throttle_enabled: bool = Field(
        description="False when the account lacks the `throttle-processor` feature: "
        "throttles then pass every event, as they do on the live data plane"
    )
    nodes: list[SimulatedNode] = Field(description="Every node, in run order")


class ProcessorSimulation(BaseModel):
    type: Literal["throttle", "filter"]
    received: int
    output: list[dict[str, Any]]
    dropped: list[dict[str, Any]] = Field(
        description="Events the processor discards (a throttle's `dropped` output, or "
        "those a filter removes)"
    )

"""Response model of the component catalogue: every type a pipeline node may have."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from tidegate.pipelines.schemas import NodeKind


class ComponentType(BaseModel):
    kind: NodeKind
    type: str = Field(description="The name to send as a node's `type`")
    aliases: list[str] = Field(description="Other names accepted for the same type")
    description: str
    feature: str | None = Field(
        description="The account feature a node of this type needs (`throttle-processor`)"
    )
    enabled: bool = Field(
        description="Whether this account may add one (false: `feature` is not enabled)"
    )
    gateway_route: bool = Field(
        description="A push source: it receives events through a gateway route (one is "
        "made when the source is created without `gateway_route_id`)"
    )
    user_config_schema: dict[str, Any] = Field(
        description="The JSON Schema of the node's `user_config`, whole (its `$defs` inside)"
    )

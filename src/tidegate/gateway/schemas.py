"""Answers of the gateway endpoint."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class GatewayAccepted(BaseModel):
    """Every destination of every pipeline bound to the route took the events."""

    status: Literal["ok"] = "ok"
    events: int = Field(description="Events received in the request")
    pipelines: int = Field(description="Pipelines the events ran through")

"""Request and response models of the v1 ingestion suspension API."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field


class SuspendToken(BaseModel):
    """The answer to ``POST .../suspend``: confirm with it to suspend."""

    token: Annotated[
        str,
        Field(description="Send it to POST /v1/config/ingestion/suspend/confirm; single use"),
    ]


class SuspendConfirm(BaseModel):
    model_config = ConfigDict(extra="ignore")
    token: Annotated[str, Field(max_length=200, description="The token from .../suspend")]


class IngestionStatus(BaseModel):
    status: Annotated[
        Literal["active", "suspended"],
        Field(description="suspended: every ingestion request is refused and nothing stored"),
    ]
    suspended: bool
    suspended_at: Annotated[
        int | None, Field(description="When the suspension began, epoch ms; null when active")
    ]

"""The index-rate alert as the platform's Terraform provider sends and reads it. The
request's webhook ``bodyTemplate`` is a JSON object; reads give it as JSON text."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from tidegate.alerts.channels import ChannelIn, empty_text_is_none, none_is_empty


def _list_is_one(value: Any) -> Any:
    """The provider's schema holds channels as a one-element list; either is fine."""
    if isinstance(value, list):
        if len(value) > 1:
            raise ValueError("only one channels object")
        return value[0] if value else None
    return value


class WebhookIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str
    method: str | None = None
    headers: dict[str, str] | None = None
    bodyTemplate: dict[str, Any] | str | None = None

    def channel(self) -> ChannelIn:
        return ChannelIn(
            integration="webhook",
            url=self.url,
            method=self.method,
            headers=self.headers,
            bodyTemplate=self.bodyTemplate,
            triggerlimit=1,
        )


Items = Annotated[
    list[str],
    Field(max_length=50),
    BeforeValidator(none_is_empty, json_schema_input_type=list[str] | None),
]


class ChannelsIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    email: Items = []
    pagerduty: Items = []
    slack: Items = []
    webhook: Annotated[
        list[WebhookIn],
        Field(max_length=20),
        BeforeValidator(none_is_empty, json_schema_input_type=list[WebhookIn] | None),
    ] = []


class IndexRateIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_lines: Annotated[int | None, Field(ge=0, le=10**15, strict=True)] = None
    max_z_score: Annotated[float | None, Field(ge=0, le=1000, strict=True)] = None
    # The provider sends an unset choice as "": documented as such, and read as unset.
    threshold_alert: Annotated[
        Literal["separate", "both", ""] | None, BeforeValidator(empty_text_is_none)
    ] = None
    frequency: Annotated[
        Literal["hourly", "daily", ""] | None, BeforeValidator(empty_text_is_none)
    ] = None
    channels: Annotated[ChannelsIn | None, BeforeValidator(_list_is_one)] = None
    enabled: Annotated[bool, Field(strict=True)] = False

    @field_validator("max_z_score")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and value != value:  # NaN
            raise ValueError("must be a number")
        return value


class WebhookOut(BaseModel):
    url: str
    method: str
    headers: dict[str, str]
    bodyTemplate: str


class ChannelsOut(BaseModel):
    email: list[str]
    pagerduty: list[str]
    slack: list[str]
    webhook: list[WebhookOut]


class IndexRate(BaseModel):
    max_lines: int
    max_z_score: float | int
    threshold_alert: str
    frequency: str
    channels: ChannelsOut
    enabled: bool


def template_text(template: dict[str, Any] | None) -> str:
    return json.dumps(template) if template is not None else ""

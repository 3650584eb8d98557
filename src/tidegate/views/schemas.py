"""Request and response models of the v1 views and preset-alerts API, in the fields
the platform's Terraform provider sends and reads (docs/alerts.md)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from tidegate.alerts.channels import ChannelIn, Channels, none_is_empty
from tidegate.api.text import STORABLE_TEXT, ReadOnlyId

MAX_LIST = 100


Name = Annotated[str, Field(min_length=1, max_length=250, pattern=STORABLE_TEXT)]
Item = Annotated[str, Field(min_length=1, max_length=512, pattern=STORABLE_TEXT)]
TextList = Annotated[
    list[Item],
    Field(max_length=MAX_LIST),
    BeforeValidator(none_is_empty, json_schema_input_type=list[Item] | None),
]


class ViewIn(BaseModel):
    """POST and PUT body. PUT replaces the whole view (the provider always sends it
    whole); unset lists may come as ``[]`` or be left out, unset strings as ``""``."""

    model_config = ConfigDict(extra="forbid")

    viewID: ReadOnlyId = None
    viewid: ReadOnlyId = None
    presetids: list[str] | None = Field(default=None, description="Read-only: ignored")
    account: ReadOnlyId = None
    name: Name
    query: Annotated[str, Field(max_length=4096, pattern=STORABLE_TEXT)] | None = None
    apps: TextList = []
    hosts: TextList = []
    levels: TextList = []
    tags: TextList = []
    category: TextList = []
    presetid: Annotated[str, Field(max_length=24)] | None = None
    channels: Annotated[
        Channels, BeforeValidator(none_is_empty, json_schema_input_type=list[ChannelIn] | None)
    ] = []


class View(BaseModel):
    viewID: str
    # The same id again: mzm's view commands read ``viewid``; the Terraform provider
    # matches keys case-insensitively and reads the same value from either.
    viewid: str
    name: str
    query: str
    apps: list[str]
    hosts: list[str]
    levels: list[str]
    tags: list[str]
    category: list[str]
    presetid: str
    presetids: list[str]
    channels: list[dict[str, Any]]


class PresetIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    presetid: ReadOnlyId = None
    name: Name
    channels: Annotated[
        Channels, BeforeValidator(none_is_empty, json_schema_input_type=list[ChannelIn] | None)
    ] = []


class Preset(BaseModel):
    presetid: str
    name: str
    channels: list[dict[str, Any]]


class Delivery(BaseModel):
    """One entry of a view's delivery log."""

    id: str
    fired: Annotated[int, Field(description="When the alert fired, epoch milliseconds")]
    event: Annotated[str, Field(description="trigger or resolve")]
    integration: str
    channel: Annotated[str, Field(description="The channel's position among the view's")]
    status: Annotated[str, Field(description="pending, delivered or failed")]
    attempts: int
    last_error: str | None
    finished: Annotated[int | None, Field(description="Delivered or given up, epoch ms")]
    count: Annotated[
        int,
        Field(
            description="Lines that made it fire; for a person in groups, those of the "
            "lines below that their scope holds"
        ),
    ]
    lines: Annotated[
        list[dict[str, Any]],
        Field(
            description="Up to 10 of the lines that made it fire, as export gives them "
            "(none for a resolve); a person in groups sees those of their scope only"
        ),
    ] = []

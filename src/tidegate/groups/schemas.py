"""Request and response models of the groups API (access scopes)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from tidegate.api.text import STORABLE_TEXT, ReadOnlyId
from tidegate.search import MAX_QUERY_LENGTH

Name = Annotated[str, Field(min_length=1, max_length=250, pattern=STORABLE_TEXT)]
Description = Annotated[str, Field(max_length=1000, pattern=STORABLE_TEXT)]
Value = Annotated[str, Field(min_length=1, max_length=512, pattern=STORABLE_TEXT)]
Values = Annotated[list[Value], Field(max_length=100)]
QueryText = Annotated[
    str,
    Field(
        max_length=MAX_QUERY_LENGTH // 2,
        pattern=STORABLE_TEXT,
        description="Lines the group's members see, in the search syntax; empty: any",
    ),
]


class GroupCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: ReadOnlyId = None
    name: Name
    description: Description = ""
    apps: Values = Field(default_factory=list, description="Only lines of these apps (any case)")
    hosts: Values = Field(default_factory=list, description="Only lines of these hosts")
    query: QueryText | None = None


class GroupUpdate(BaseModel):
    """PATCH body: only the fields present change."""

    model_config = ConfigDict(extra="forbid")
    id: ReadOnlyId = None
    name: Name | None = None
    description: Description | None = None
    apps: Values | None = None
    hosts: Values | None = None
    query: QueryText | None = None


class Group(BaseModel):
    id: str
    name: str
    description: str
    apps: list[str]
    hosts: list[str]
    query: str | None
    # E-mails of the members in the group (set through the members API).
    members: list[str]

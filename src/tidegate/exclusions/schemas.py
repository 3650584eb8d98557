"""Request and response models of the v1 ingestion exclusion rules API.

Field shapes live here; the rules that span fields (at least one of hosts, apps and
query; the query's syntax and reserved fields) live in the service.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from tidegate.api.text import STORABLE_TEXT, ReadOnlyId
from tidegate.search import MAX_QUERY_LENGTH

Title = Annotated[str, Field(min_length=1, max_length=250, pattern=STORABLE_TEXT)]
Name = Annotated[str, Field(min_length=1, max_length=512, pattern=STORABLE_TEXT)]
Names = Annotated[
    list[Name],
    Field(
        max_length=100,
        description="Non-empty names; an empty list counts as not given (see docs/api-v1.md)",
    ),
]
QueryText = Annotated[
    str,
    Field(
        max_length=MAX_QUERY_LENGTH,
        pattern=STORABLE_TEXT,
        description="A query in the search syntax; an empty query counts as not given",
    ),
]


class ExclusionRuleCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: ReadOnlyId = None
    title: Title
    active: bool = False
    indexonly: bool = True
    hosts: Names | None = None
    apps: Names | None = None
    query: QueryText | None = None


class ExclusionRuleUpdate(BaseModel):
    """PATCH body: only the fields present change. ``hosts``, ``apps`` and ``query`` may
    be cleared (null, ``[]`` or ``""``) as long as one of the three remains; null for
    ``title``, ``active`` or ``indexonly`` leaves them unchanged."""

    model_config = ConfigDict(extra="forbid")
    id: ReadOnlyId = None
    title: Title | None = None
    active: bool | None = None
    indexonly: bool | None = None
    hosts: Names | None = None
    apps: Names | None = None
    query: QueryText | None = None


class ExclusionRule(BaseModel):
    id: str
    title: str
    hosts: Annotated[list[str], Field(description="Empty when the rule has no hosts part")]
    apps: Annotated[list[str], Field(description="Empty when the rule has no apps part")]
    query: Annotated[str, Field(description="Empty when the rule has no query part")]
    active: bool
    indexonly: bool

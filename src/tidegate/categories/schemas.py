"""Request and response models of the v1 categories API."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from tidegate.api.text import STORABLE_TEXT, ReadOnlyId

CategoryType = Literal["views", "boards", "screens"]


class CategoryIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: ReadOnlyId = None
    type: Annotated[str | None, Field(description="Read-only: the path names the type")] = None
    name: Annotated[str, Field(min_length=1, max_length=250, pattern=STORABLE_TEXT)]


class Category(BaseModel):
    id: str
    type: str
    name: str

"""Request and response models of the v1 keys API."""

from __future__ import annotations

from typing import Annotated, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from tidegate.api.text import STORABLE_TEXT

# The kinds an account manages here; enterprise keys never appear in this API.
AccountKeyType: TypeAlias = Literal["ingestion", "service"]

KeyName = Annotated[
    str,
    Field(max_length=250, pattern=STORABLE_TEXT, description="A label; empty means no name"),
]


class KeyCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: KeyName | None = None


class KeyUpdate(BaseModel):
    """PUT body: renames the key. An absent ``name`` changes nothing; null or empty
    removes the name."""

    model_config = ConfigDict(extra="forbid")
    name: KeyName | None = None


Created = Annotated[int, Field(description="Creation time, milliseconds since the epoch")]


class Key(BaseModel):
    """A key as the platform shows it, its secret included (opened from its sealed copy).

    ``key`` is null for a key whose secret cannot be shown: one made before secrets were
    kept sealed (migration 0005; only its hash exists), or sealed under another server
    secret. ``hint`` (the last four characters) is there for every key."""

    id: str
    name: str | None
    type: AccountKeyType
    key: Annotated[
        str | None,
        Field(description="The secret; null when it was never kept (keys made before 0005)"),
    ]
    created: Created
    hint: Annotated[str, Field(description="The last four characters of the key")]


class CreatedKey(BaseModel):
    """The answer to a create."""

    id: str
    key: Annotated[str, Field(description="The secret")]
    name: str | None
    type: AccountKeyType
    created: Created

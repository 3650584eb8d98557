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


class Key(BaseModel):
    """A key as listed: never the secret, only its last four characters."""

    id: str
    name: str | None
    type: AccountKeyType
    created: Annotated[int, Field(description="Creation time, seconds since the epoch")]
    hint: Annotated[str, Field(description="The last four characters of the key")]


class CreatedKey(BaseModel):
    """The answer to a create: the only time the secret is shown."""

    id: str
    key: Annotated[str, Field(description="The secret; shown once, here")]
    name: str | None
    type: AccountKeyType
    created: Annotated[int, Field(description="Creation time, seconds since the epoch")]

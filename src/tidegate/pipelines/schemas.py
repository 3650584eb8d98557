"""Request and response models of the pipeline API: pipelines and their nodes.

``user_config`` is a free JSON object here on purpose: each node type has its own
configuration, validated by the service with its component's model
(``components.validation``), so that an error names the field inside ``user_config``.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, Field, ValidationInfo, field_validator
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import PydanticCustomError

from tidegate.api.request_model import RequestModel
from tidegate.api.text import STORABLE_TEXT
from tidegate.components.catalogue import REGISTRY

NodeKind = Literal["source", "processor", "destination"]
if TYPE_CHECKING:
    SourceType = str
    ProcessorType = str
    DestinationType = str
else:
    # The type names (and aliases) the registry holds, as enums in the API document.
    SourceType = Literal[tuple(REGISTRY.names("source"))]
    ProcessorType = Literal[tuple(REGISTRY.names("processor"))]
    DestinationType = Literal[tuple(REGISTRY.names("destination"))]

_NO_NUL = STORABLE_TEXT

Title = Annotated[str, Field(min_length=1, max_length=250, pattern=_NO_NUL)]
Description = Annotated[str, Field(max_length=1000, pattern=_NO_NUL)]
ResourceId = Annotated[str, Field(min_length=1, max_length=36, pattern=_NO_NUL)]
# A node id, or ``<throttle node id>.dropped`` for a throttle's second output.
InputRef = Annotated[str, Field(min_length=1, max_length=44, pattern=_NO_NUL)]
Inputs = Annotated[
    list[InputRef],
    Field(
        max_length=50,
        description="Ids of upstream nodes of the same pipeline; "
        "`<throttle_node_id>.dropped` names a throttle's second output",
    ),
]
UserConfig = Annotated[
    dict[str, Any],
    Field(
        description="Options of the node's type; the schema of each type is in the "
        "document's components as `<kind>.<type>.user_config` (see docs/components.md)",
    ),
]


def _drop_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


def _absent() -> Any:
    """An optional PATCH field: absent means unchanged; the document shows no null."""
    return Field(default=None, json_schema_extra=_drop_default)


_JSON_TYPES = {
    "title": "string",
    "type": "string",
    "gateway_route_id": "string",
    "inputs": "list",
    "user_config": "dict",
}
_NODE_NOT_NULL = frozenset({"type", "gateway_route_id", "inputs", "user_config"})
_TYPE_WORDS = {"string": "a valid string", "list": "a valid list", "dict": "a valid dictionary"}


class _Patch(RequestModel):
    """PATCH bodies: absent fields stay unchanged; a given field in ``not_null`` may not
    be null (the others, like a node's title, are cleared by null)."""

    not_null: ClassVar[frozenset[str]] = frozenset()

    @field_validator("*", mode="before")
    @classmethod
    def _not_null(cls, value: Any, info: ValidationInfo) -> Any:
        name = info.field_name
        if value is None and name in cls.not_null:
            kind = _JSON_TYPES[name]
            raise PydanticCustomError(f"{kind}_type", f"Input should be {_TYPE_WORDS[kind]}")
        return value


class PipelineCreate(RequestModel):
    title: Title
    description: Description | None = None


class PipelineUpdate(_Patch):
    """PATCH body: only the fields present change; ``description`` may be set to null."""

    not_null = frozenset({"title"})
    title: Title | SkipJsonSchema[None] = _absent()
    description: Description | None = None


class Node(BaseModel):
    id: str
    pipeline_id: str
    kind: NodeKind
    type: str
    title: str | None
    inputs: list[str]
    user_config: dict[str, Any]
    gateway_route_id: str | None = Field(
        description="The gateway route an `http` source receives events from; null otherwise"
    )
    created_at: datetime
    updated_at: datetime


class Pipeline(BaseModel):
    id: str
    account_id: str
    title: str
    description: str | None
    revision: int = Field(description="Bumped on every change to the pipeline or its nodes")
    created_at: datetime
    updated_at: datetime


class PipelineDetail(Pipeline):
    nodes: list[Node]


class SourceCreate(RequestModel):
    type: SourceType
    title: Title | None = None
    gateway_route_id: ResourceId | None = Field(
        default=None,
        description="Required by push sources (http, webhook, splunk-hec, "
        "open-telemetry-logs); demo-logs and log-analysis-ingestion have none",
    )
    inputs: Inputs = Field(default_factory=list)
    user_config: UserConfig = Field(default_factory=dict)


class SourceUpdate(_Patch):
    not_null = _NODE_NOT_NULL
    type: SourceType | SkipJsonSchema[None] = _absent()
    title: Title | None = None
    gateway_route_id: ResourceId | SkipJsonSchema[None] = _absent()
    inputs: Inputs | SkipJsonSchema[None] = _absent()
    user_config: UserConfig | SkipJsonSchema[None] = _absent()


class ProcessorCreate(RequestModel):
    type: ProcessorType
    title: Title | None = None
    inputs: Inputs = Field(default_factory=list)
    user_config: UserConfig = Field(default_factory=dict)


class ProcessorUpdate(_Patch):
    not_null = _NODE_NOT_NULL
    type: ProcessorType | SkipJsonSchema[None] = _absent()
    title: Title | None = None
    inputs: Inputs | SkipJsonSchema[None] = _absent()
    user_config: UserConfig | SkipJsonSchema[None] = _absent()


class DestinationCreate(RequestModel):
    type: DestinationType
    title: Title | None = None
    inputs: Inputs = Field(default_factory=list)
    user_config: UserConfig = Field(default_factory=dict)


class DestinationUpdate(_Patch):
    not_null = _NODE_NOT_NULL
    type: DestinationType | SkipJsonSchema[None] = _absent()
    title: Title | None = None
    inputs: Inputs | SkipJsonSchema[None] = _absent()
    user_config: UserConfig | SkipJsonSchema[None] = _absent()


NodeCreate = SourceCreate | ProcessorCreate | DestinationCreate
NodeUpdate = SourceUpdate | ProcessorUpdate | DestinationUpdate

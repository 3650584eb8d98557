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
# A node id, or ``<node id>.<output>`` (a throttle's ``dropped``, a route's output names
# of up to 64 characters, ``_unmatched``).
InputRef = Annotated[str, Field(min_length=1, max_length=101, pattern=_NO_NUL)]
Inputs = Annotated[
    list[InputRef],
    Field(
        max_length=50,
        description="Ids of upstream nodes of the same pipeline; `<node_id>.<output>` "
        "names another output of a node (a throttle's `dropped`, a route's output names "
        "and `_unmatched`)",
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


GenerationId = Annotated[
    int,
    Field(
        ge=0,
        le=2_147_483_647,
        description="Optimistic concurrency: the generation_id last read. An update "
        "carrying another one than the current answers 409; every update increments it. "
        "Ignored on create (the platform's clients send 0).",
    ),
]
ShortText = Annotated[str, Field(max_length=50, pattern=_NO_NUL)]
DeploymentGroups = Annotated[list[ShortText], Field(max_length=50)]


class PipelineCreate(RequestModel):
    title: Title
    description: Description | None = None
    origin: ShortText | None = Field(
        default=None, description="Who made it: the Terraform provider sends `terraform`"
    )
    deploy_type: ShortText | None = Field(
        default=None, description="Stored and echoed (the platform's quickstart sends `saas`)"
    )
    deployment_groups: DeploymentGroups | None = None
    generation_id: GenerationId | None = None


class PipelineReplace(PipelineCreate):
    """PUT: the whole pipeline; absent optional fields are cleared. ``id``, when given,
    must be the path's."""

    id: ResourceId | None = None


class PipelineUpdate(_Patch):
    """PATCH body: only the fields present change; ``description`` may be set to null."""

    not_null = frozenset({"title"})
    title: Title | SkipJsonSchema[None] = _absent()
    description: Description | None = None
    origin: ShortText | None = None
    deploy_type: ShortText | None = None
    deployment_groups: DeploymentGroups | None = None
    generation_id: GenerationId | None = None


class NodeOutputRef(BaseModel):
    """A named output of a processor, usable as another node's input."""

    id: str = Field(description="`<node id>.<output name>`, as written in `inputs`")
    label: str


class Node(BaseModel):
    id: str
    pipeline_id: str
    kind: NodeKind
    type: str
    title: str | None
    description: str | None = None
    generation_id: int = 0
    inputs: list[str]
    user_config: dict[str, Any]
    gateway_route_id: str | None = Field(
        description="The gateway route a source receives events from; null otherwise"
    )
    outputs: list[NodeOutputRef] = Field(
        default_factory=list,
        description="A processor's named outputs besides its main one (e.g. a throttle's "
        "`<id>.dropped`, a route's conditions and `<id>._unmatched`)",
    )
    created_at: datetime
    updated_at: datetime


class Pipeline(BaseModel):
    id: str
    account_id: str
    title: str
    description: str | None
    origin: str | None
    deploy_type: str | None
    deployment_groups: list[str]
    generation_id: int = Field(description="Bumped by every update of the pipeline's fields")
    revision: int = Field(description="Bumped on every change to the draft or its nodes")
    published_revision: int | None = Field(
        description="The draft revision that runs; null until the first publish"
    )
    published_at: datetime | None
    has_unpublished_changes: bool
    created_at: datetime
    updated_at: datetime


class PipelineDetail(Pipeline):
    nodes: list[Node] = Field(description="The draft's nodes")


class PublishQuery(BaseModel):
    allow_unconnected_edges: bool = Field(
        default=False,
        description="Publish although some nodes have a loose end (no inputs, or an "
        "output no node takes); the platform's Terraform provider sends `true`",
    )


class PublishBody(RequestModel):
    """The platform's clients send ``{}``."""


class _NodeBody(RequestModel):
    """POST (create) and PUT (replace) of a node: the whole node. On PUT, absent
    optional fields are cleared (a source's ``gateway_route_id`` is kept: the platform's
    clients send it on create only)."""

    id: ResourceId | None = Field(default=None, description="On PUT, the path's id (or absent)")
    title: Title | None = None
    description: Description | None = None
    inputs: Inputs = Field(default_factory=list)
    user_config: UserConfig = Field(default_factory=dict)
    generation_id: GenerationId | None = None


class SourceCreate(_NodeBody):
    type: SourceType
    gateway_route_id: ResourceId | None = Field(
        default=None,
        description="A gateway route (shared source) of the account; absent on an `http` "
        "source: a route is made for it and its id answered",
    )


class SourceUpdate(_Patch):
    not_null = _NODE_NOT_NULL
    type: SourceType | SkipJsonSchema[None] = _absent()
    title: Title | None = None
    description: Description | None = None
    gateway_route_id: ResourceId | SkipJsonSchema[None] = _absent()
    inputs: Inputs | SkipJsonSchema[None] = _absent()
    user_config: UserConfig | SkipJsonSchema[None] = _absent()
    generation_id: GenerationId | None = None


class ProcessorCreate(_NodeBody):
    type: ProcessorType


class ProcessorUpdate(_Patch):
    not_null = _NODE_NOT_NULL
    type: ProcessorType | SkipJsonSchema[None] = _absent()
    title: Title | None = None
    description: Description | None = None
    inputs: Inputs | SkipJsonSchema[None] = _absent()
    user_config: UserConfig | SkipJsonSchema[None] = _absent()
    generation_id: GenerationId | None = None


class DestinationCreate(_NodeBody):
    type: DestinationType


class DestinationUpdate(_Patch):
    not_null = _NODE_NOT_NULL
    type: DestinationType | SkipJsonSchema[None] = _absent()
    title: Title | None = None
    description: Description | None = None
    inputs: Inputs | SkipJsonSchema[None] = _absent()
    user_config: UserConfig | SkipJsonSchema[None] = _absent()
    generation_id: GenerationId | None = None


NodeCreate = SourceCreate | ProcessorCreate | DestinationCreate
NodeUpdate = SourceUpdate | ProcessorUpdate | DestinationUpdate

"""Request and response models of the v1 parsing templates API
(``/v1/config/parsing/templates``, docs/line-parsing.md, "Custom templates").

Field shapes live here; whether a pattern compiles and the account's limits are the
service's."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tidegate.api.text import STORABLE_TEXT, ReadOnlyId
from tidegate.processing.grok import MAX_PATTERN_CHARS

State = Literal["active", "inactive", "draft"]
Name = Annotated[str, Field(min_length=1, max_length=250, pattern=STORABLE_TEXT)]
Pattern = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_PATTERN_CHARS,
        pattern=STORABLE_TEXT,
        description="RE2 syntax with named groups `(?P<field>...)` and Grok-like tokens "
        "`%{NAME}`, `%{NAME:field}`, `%{NAME:field:int}` (docs/line-parsing.md)",
    ),
]
TemplateId = Annotated[str, Field(min_length=1, max_length=24, pattern=STORABLE_TEXT)]
MAX_PREVIEW_LINES = 100
SampleLine = Annotated[str, Field(max_length=32_768, pattern=STORABLE_TEXT)]


class ParsingTemplateCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: ReadOnlyId = None
    name: Name
    pattern: Pattern
    state: State = Field(
        default="draft", description="draft (default), inactive or active: only active ones apply"
    )


class ParsingTemplateUpdate(BaseModel):
    """PATCH body: only the fields present change (null leaves a field unchanged)."""

    model_config = ConfigDict(extra="forbid")
    id: ReadOnlyId = None
    name: Name | None = None
    pattern: Pattern | None = None
    state: State | None = None


class ParsingTemplate(BaseModel):
    id: str
    name: str
    pattern: str
    state: State
    position: Annotated[int, Field(description="0 first: the first active match applies")]
    fields: Annotated[list[str], Field(description="The fields the pattern captures")]
    activated_at: Annotated[
        int | None,
        Field(
            description="When it was last made active (epoch ms): it applies to lines "
            "ingested from then on, never to lines stored before"
        ),
    ]
    matched_lines: Annotated[
        int,
        Field(
            description="How many lines it parsed since it was created or its pattern last "
            "changed (each worker adds its count every few seconds)"
        ),
    ] = 0
    last_matched_at: Annotated[
        int | None,
        Field(description="When the latest of those lines was ingested (epoch ms)"),
    ] = None
    created_at: int
    updated_at: int


class ParsingTemplateOrder(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ids: Annotated[
        list[TemplateId],
        Field(max_length=1000, description="Every template id of the account, once, first first"),
    ]


class ParsingTemplatePreview(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pattern: Pattern
    size: Annotated[
        int,
        Field(ge=1, le=MAX_PREVIEW_LINES, description="How many of the account's latest lines"),
    ] = 20
    lines: Annotated[
        list[SampleLine] | None,
        Field(
            max_length=MAX_PREVIEW_LINES,
            description="Texts to try instead of the account's latest stored lines",
        ),
    ] = None
    id: Annotated[
        TemplateId | None,
        Field(
            description=(
                "The saved template this pattern is for: the active templates before it are "
                "tried first. Without it, every active template is (a new one goes last)"
            ),
        ),
    ] = None


class TemplateRef(BaseModel):
    id: str
    name: str


class LineSets(BaseModel):
    app: str | None = None
    host: str | None = None
    ts: Annotated[
        int | None, Field(description="The time read from the `_ts` capture (epoch ms)")
    ] = None


class PreviewLine(BaseModel):
    line: str
    ts: int | None = None
    host: str | None = None
    app: str | None = None
    matched: Annotated[bool, Field(description="The pattern would give the line its fields")]
    fields: Annotated[
        dict[str, Any] | None, Field(description="The fields as they would be stored")
    ] = None
    level: Annotated[str | None, Field(description="The level the template gives")] = None
    sets: Annotated[
        LineSets | None,
        Field(description="The line's own app, host and time the pattern would set"),
    ] = None
    taken_by: Annotated[
        TemplateRef | None,
        Field(description="The active template tried before it that takes the line first"),
    ] = None


class ParsingTemplatePreviewResult(BaseModel):
    fields: Annotated[list[str], Field(description="The fields the pattern captures")]
    total: int
    matched: int
    taken: Annotated[
        int, Field(description="Lines an active template tried before it takes first")
    ] = 0
    lines: list[PreviewLine]

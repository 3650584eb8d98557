"""Wire models of ingestion and usage.

The ingest body is read by hand in one pass (``ingest.decoding``, ``service.build_line``),
never through these models: they describe the body in the OpenAPI document. The reading
is lenient per line, as the platform is: a line's oddities are repaired (coerced to
text, truncated, replaced by a default) and counted, never a 400 for the batch.
Unknown fields are ignored (loggers send extras such as ``category``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


def _text(max_length: int, description: str) -> Any:
    return Field(
        default=None,
        description=f"{description}; longer text is truncated to {max_length} characters",
    )


Timestamp = Annotated[
    int | float | str | None,
    Field(
        default=None,
        description=(
            "An epoch time (a number, or a string of digits) in seconds, milliseconds, "
            "microseconds or nanoseconds, told apart by magnitude (below 10^11: seconds, "
            "10^14: ms, 10^17: us, 10^20: ns), or an ISO 8601 / RFC 3339 time "
            "(`2025-01-02T03:04:05.678Z`); a time without an offset is UTC. Moved by the "
            "sender's clock error when `now` is more than a minute off. Missing: the `now` "
            "parameter, else the time tidegate received the request. A value that is not a "
            "time falls back the same way and is counted in usage as `lines_fallback`."
        ),
    ),
]


class IngestLine(BaseModel):
    model_config = ConfigDict(extra="allow")

    line: Annotated[
        str,
        Field(
            description=("The message text. A number, boolean or object is stored as its JSON text")
        ),
    ]
    timestamp: Timestamp = None
    t: Annotated[
        int | float | str | None,
        Field(default=None, description="The agent payload's timestamp (when no `timestamp`)"),
    ] = None
    app: Annotated[
        str | None, _text(512, "Application name; missing: the base name of `file` (or `f`)")
    ] = None
    level: Annotated[str | None, _text(64, "Level (INFO, ERROR, ...)")] = None
    env: Annotated[str | None, _text(256, "Environment")] = None
    file: Annotated[str | None, _text(512, "Source file")] = None
    f: Annotated[str | None, _text(512, "The agent payload's source file (when no `file`)")] = None
    hostname: Annotated[
        str | None, _text(256, "Overrides the request's hostname for this line")
    ] = None
    host: Annotated[
        str | None,
        _text(256, "The platform agent's per-line host (the node); `hostname` wins over it"),
    ] = None
    meta: Annotated[
        dict[str, Any] | str | None,
        Field(
            default=None,
            description=(
                "An object: kept as the line's meta and searchable as fields. A string "
                "holding a JSON object (`indexMeta: false`, the Python handler's default): "
                "kept and shown, not searchable"
            ),
        ),
    ] = None
    label: Annotated[
        dict[str, Any] | None,
        Field(
            default=None,
            description="The agent's (Kubernetes) labels, kept and searchable as meta `labels`",
        ),
    ] = None
    annotation: Annotated[
        dict[str, Any] | None,
        Field(
            default=None,
            description=(
                "The agent's (Kubernetes) annotations, kept and searchable as meta `annotations`"
            ),
        ),
    ] = None
    pid: Annotated[
        int | None, Field(default=None, description="The agent payload's process id, meta `pid`")
    ] = None


class IngestBody(BaseModel):
    """``{"lines": [...]}``, or the handler's ``{"e": "ls", "ls": [...]}``."""

    model_config = ConfigDict(extra="ignore")

    lines: Annotated[list[IngestLine] | None, Field(max_length=100_000)] = None
    e: Literal["ls"] | None = None
    ls: Annotated[list[IngestLine] | None, Field(max_length=100_000)] = None


class IngestOk(BaseModel):
    status: Literal["ok"]

"""Wire models of ingestion and usage.

Line objects ignore fields they do not know: the platform's logging libraries send
extras (the Python handler adds ``hostname``; others send ``file`` or ``category``), and
refusing a whole batch for an extra field would make a logger drop it. Every field
tidegate does know is checked strictly (no coercion, the columns' lengths).
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr


def _text(max_length: int, description: str) -> Any:
    return Field(default=None, max_length=max_length, description=description)


Timestamp = Annotated[
    StrictInt | StrictFloat | StrictStr | None,
    Field(
        default=None,
        description=(
            "Epoch milliseconds (a number, or a string of digits), or an RFC 3339 / ISO 8601 "
            "time with a UTC offset (`2025-01-02T03:04:05.678Z`). Default: the `now` "
            "parameter, else the time tidegate received the request."
        ),
    ),
]


class IngestLine(BaseModel):
    model_config = ConfigDict(extra="ignore")

    line: Annotated[StrictStr, Field(description="The message text")]
    timestamp: Timestamp = None
    app: Annotated[StrictStr | None, _text(512, "Application name")] = None
    level: Annotated[StrictStr | None, _text(64, "Level (INFO, ERROR, ...)")] = None
    env: Annotated[StrictStr | None, _text(256, "Environment")] = None
    file: Annotated[StrictStr | None, _text(512, "Source file")] = None
    hostname: Annotated[
        StrictStr | None, _text(256, "Overrides the request's hostname for this line")
    ] = None
    meta: Annotated[
        dict[str, Any] | StrictStr | None,
        Field(
            default=None,
            description=(
                "An object, or a string holding a JSON object (the Python handler's "
                "default); kept as the line's meta and searchable as fields"
            ),
        ),
    ] = None


class IngestBody(BaseModel):
    """``{"lines": [...]}``, or the Python handler's ``{"e": "ls", "ls": [...]}``."""

    model_config = ConfigDict(extra="ignore")

    lines: list[IngestLine] | None = None
    e: Literal["ls"] | None = None
    ls: list[IngestLine] | None = None


class IngestOk(BaseModel):
    status: Literal["ok"]


class DayUsage(BaseModel):
    day: date
    lines_stored: int
    bytes_stored: int
    lines_excluded: int
    bytes_excluded: int


class UsageTotals(BaseModel):
    lines_stored: int
    bytes_stored: int
    lines_excluded: int
    bytes_excluded: int


class Usage(BaseModel):
    """Per UTC day, every day of the range (days with nothing are zeros)."""

    from_: Annotated[date, Field(alias="from")]
    to: date
    days: list[DayUsage]
    totals: UsageTotals

    model_config = ConfigDict(populate_by_name=True)

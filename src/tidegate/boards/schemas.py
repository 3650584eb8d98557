"""Request and response models of the v1 boards API.

Graph objects are the client's own configuration and are stored as given, once they
are known to survive a round trip through either database and back out as JSON.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from tidegate.api.text import STORABLE_TEXT, ReadOnlyId

MAX_GRAPH_DEPTH = 32

Title = Annotated[str, Field(min_length=1, max_length=250, pattern=STORABLE_TEXT)]


def _storable_graphs(graphs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Refuses what a JSON column or a JSON response cannot hold: NaN and infinities
    (Python's JSON parser accepts them, PostgreSQL does not), strings that are not
    valid Unicode, and nesting deeper than MAX_GRAPH_DEPTH. Iterative, so depth cannot
    exhaust the stack."""
    pending: list[tuple[Any, int]] = [(graph, 1) for graph in graphs]
    while pending:
        value, depth = pending.pop()
        if depth > MAX_GRAPH_DEPTH:
            raise ValueError(f"graphs may nest at most {MAX_GRAPH_DEPTH} levels deep")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError("graphs may not contain NaN or infinite numbers")
        if isinstance(value, str):
            _check_text(value)
        elif isinstance(value, dict):
            for key, item in value.items():
                _check_text(key)
                pending.append((item, depth + 1))
        elif isinstance(value, list):
            pending.extend((item, depth + 1) for item in value)
    return graphs


def _check_text(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("graphs may only contain valid Unicode text") from None


Graphs = Annotated[
    list[dict[str, Any]],
    Field(max_length=200, description="The board's graphs, as JSON objects"),
    AfterValidator(_storable_graphs),
]


class BoardCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    boardid: ReadOnlyId = None
    account: ReadOnlyId = None
    title: Title
    graphs: Graphs | None = Field(default=None, description="Absent or null: no graphs")


class BoardUpdate(BaseModel):
    """PATCH body: only the fields present change; null leaves a field unchanged."""

    model_config = ConfigDict(extra="forbid")
    boardid: ReadOnlyId = None
    account: ReadOnlyId = None
    title: Title | None = None
    graphs: Graphs | None = None


class BoardSummary(BaseModel):
    """A board as listed: the spec's Board."""

    boardid: str
    account: Annotated[str, Field(description="The account's short identifier")]
    title: str


class Board(BoardSummary):
    """A board as read, created or changed: with its graphs."""

    graphs: list[dict[str, Any]]

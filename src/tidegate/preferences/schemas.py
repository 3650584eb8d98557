"""Request and response models of a person's preferences (the web app's settings)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from tidegate.api.request_model import RequestModel
from tidegate.search import MAX_QUERY_LENGTH

# The latest distinct queries kept per person.
MAX_QUERY_HISTORY = 50

QueryText = Annotated[str, Field(min_length=1, max_length=MAX_QUERY_LENGTH)]


class Preferences(BaseModel):
    # Times shown and typed in UTC, not in the browser's zone.
    utc: bool = False
    # The person's latest distinct queries, newest first.
    query_history: Annotated[list[str], Field(max_length=MAX_QUERY_HISTORY)] = []


class PreferencesChange(RequestModel):
    """The settings to change; a field left out (or null) keeps its value. The query
    history is not set here: each search adds to it (``POST .../query-history``)."""

    utc: bool | None = None


class RememberQuery(RequestModel):
    query: QueryText

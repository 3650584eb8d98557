"""Request and response models of a person's preferences (the web app's settings)."""

from __future__ import annotations

from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tidegate.api.request_model import RequestModel, integral
from tidegate.search import MAX_QUERY_LENGTH

# The latest distinct queries kept per person.
MAX_QUERY_HISTORY = 50
# The searches a person may star (kept until unstarred), and
# the characters of the name one may be given.
MAX_STARRED = 50
MAX_STARRED_NAME_LENGTH = 100
# A search's host, app or level filter, or its picked fields, as kept with its query:
# values per list, and
# characters per value.
MAX_FILTER_VALUES = 50
MAX_FILTER_VALUE_LENGTH = 256
# A relative range as the web app writes it (`15m`, `2h`, `7d`): the span back from now.
RELATIVE_RANGE = r"^[0-9]{1,6}[smhdw]$"

QueryText = Annotated[str, Field(min_length=1, max_length=MAX_QUERY_LENGTH)]
FilterValues = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=MAX_FILTER_VALUE_LENGTH)]],
    Field(max_length=MAX_FILTER_VALUES),
]
# A range's bound: ms since the epoch, at most what a JSON number holds exactly.
MAX_MILLIS = 2**53 - 1
Millis = Annotated[int, Field(ge=0, le=MAX_MILLIS), integral]


class SearchFields(BaseModel):
    """What a search ran with besides its query. The range is either ``range``
    (relative: the span back from the moment the search runs again) or ``from`` and
    ``to`` (absolute, ms since the epoch), or none (a search remembered before ranges
    were kept, or by a client that sends the query only)."""

    model_config = ConfigDict(populate_by_name=True)

    range: Annotated[
        str | None,
        Field(pattern=RELATIVE_RANGE, description="A relative range (`15m`, `2h`, `7d`)"),
    ] = None
    from_ms: Annotated[
        Millis | None, Field(alias="from", description="An absolute range's start, in ms")
    ] = None
    to_ms: Annotated[
        Millis | None, Field(alias="to", description="An absolute range's end, in ms")
    ] = None
    hosts: Annotated[FilterValues, Field(description="The host filter")] = []
    apps: Annotated[FilterValues, Field(description="The app filter")] = []
    levels: Annotated[FilterValues, Field(description="The level filter")] = []
    fields: Annotated[
        FilterValues, Field(description="The fields shown by the field picker (their top values)")
    ] = []


class Search(SearchFields):
    """One entry of the query history: the query and the range and filters it last
    ran with."""

    query: str


class StarredSearch(Search):
    """A starred search: a search, and the name the person gave it (none until named)."""

    name: Annotated[
        str | None,
        Field(max_length=MAX_STARRED_NAME_LENGTH, description="The name it was given, if any"),
    ] = None


class Preferences(BaseModel):
    # Times shown and typed in UTC, not in the browser's zone.
    utc: bool = False
    # The person's latest distinct queries, newest first.
    query_history: Annotated[
        list[str],
        Field(
            max_length=MAX_QUERY_HISTORY, description="The latest distinct queries, newest first"
        ),
    ] = []
    searches: Annotated[
        list[Search],
        Field(
            max_length=MAX_QUERY_HISTORY,
            description="The same entries as `query_history`, in its order, each with the "
            "range and filters its query last ran with (none for one remembered without)",
        ),
    ] = []
    starred: Annotated[
        list[StarredSearch],
        Field(
            max_length=MAX_STARRED,
            description="The searches the person starred, newest starred first, each with "
            "the range and filters it was starred with and the name it was given; kept "
            "until unstarred, whatever the history keeps",
        ),
    ] = []


class PreferencesChange(RequestModel):
    """The settings to change; a field left out (or null) keeps its value. The query
    history is not set here: each search adds to it (``POST .../query-history``)."""

    utc: bool | None = None


class RememberQuery(RequestModel, SearchFields):
    """A search that ran: its query, and (optional) the range and filters it ran with."""

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=False)

    query: QueryText

    @model_validator(mode="after")
    def one_range(self) -> Self:
        absolute = (self.from_ms, self.to_ms)
        if (None in absolute) != (absolute == (None, None)):
            raise ValueError("from, to: an absolute range needs both")
        if self.range is not None and self.from_ms is not None:
            raise ValueError("range: either a relative range or from and to, not both")
        if self.from_ms is not None and self.to_ms is not None and self.from_ms > self.to_ms:
            raise ValueError("from: must not be after to")
        return self


class StarQuery(RememberQuery):
    """A search to star: its query, and (optional) the range and filters to run it with."""


class NameStarred(RequestModel):
    """A name for one starred search (by its query); null or blank takes its name away."""

    query: QueryText
    name: Annotated[str | None, Field(max_length=MAX_STARRED_NAME_LENGTH)]


class MoveStarred(RequestModel):
    """One starred search (by its query) moved to ``position`` among them: 0 is first; a
    position past the end is the last."""

    query: QueryText
    position: Annotated[int, Field(ge=0)]


class ForgetQuery(RequestModel):
    """One query to take out of the history (with the range and filters kept for it)."""

    query: QueryText

"""The one error the search syntax raises."""

from __future__ import annotations


class QuerySyntaxError(ValueError):
    """A query that does not parse.

    ``str(error)`` is a complete, user-facing sentence that names the column (1-based)
    where the problem is, fit for a 400 answer. ``reason`` is the same sentence without
    the column and ``position`` the 0-based offset into the query text.
    """

    def __init__(self, reason: str, position: int) -> None:
        self.reason = reason
        self.position = position
        super().__init__(f"{reason} (column {position + 1})")

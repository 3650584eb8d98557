"""Group access scopes: which of an account's lines a person in groups may see.

A group's scope is ``apps`` and ``hosts`` (exact values, any case) and a ``query`` in
the search syntax; every part that is set must hold. A person in several groups sees
the lines of any of them; a person in no group sees all of the account's lines.

``scoped_filter`` is the one place a reader's filter meets the scope: it returns the
request's filter with the scope added to its query, so that export (v1 and v2),
aggregate, tail and alerts run the scope in the same database query (and the same
matcher) as the request's own filter. docs/people.md, "Groups".
"""

from __future__ import annotations

from dataclasses import dataclass

from tidegate.errors import BadRequest
from tidegate.search import MAX_QUERY_LENGTH, QuerySyntaxError, compile_query


@dataclass(frozen=True, slots=True)
class GroupScope:
    apps: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()
    query: str | None = None

    @property
    def unrestricted(self) -> bool:
        return not (self.apps or self.hosts or (self.query and self.query.strip()))

    def as_query(self) -> str:
        parts = []
        if self.apps:
            parts.append(_any_of("app", self.apps))
        if self.hosts:
            parts.append(_any_of("host", self.hosts))
        if self.query and self.query.strip():
            parts.append(f"({self.query.strip()})")
        return " ".join(parts)


@dataclass(frozen=True, slots=True)
class AccessScope:
    """The union of a person's groups' scopes; never empty (None stands for 'all')."""

    groups: tuple[GroupScope, ...]

    @classmethod
    def of(cls, groups: list[GroupScope]) -> AccessScope | None:
        if not groups or any(group.unrestricted for group in groups):
            return None
        return cls(tuple(groups))

    def as_query(self) -> str:
        if len(self.groups) == 1:
            return self.groups[0].as_query()
        return " OR ".join(f"({group.as_query()})" for group in self.groups)


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _any_of(field: str, values: tuple[str, ...]) -> str:
    # ``==`` is the exact (case-insensitive) match, served by the folded column's index.
    terms = [f"{field}:=={_quoted(value)}" for value in values]
    return terms[0] if len(terms) == 1 else "(" + " OR ".join(terms) + ")"


def validate_scope_query(text: str) -> None:
    """A group's query must compile (400 naming the field otherwise)."""
    try:
        compile_query(text)
    except QuerySyntaxError as error:
        raise BadRequest(f"query: {error}") from None


def scoped_query(query: str | None, scope: AccessScope | None) -> str | None:
    """The request's query text with the scope added (AND): what readers compile."""
    if scope is None:
        return query
    return limited_query(query, scope.as_query())


def limited_query(query: str | None, limit: str) -> str:
    """``query`` ANDed with the search syntax ``limit`` (a scope's ``as_query``). The
    query is compiled alone first: a mistake is reported at its own column, and text such
    as ``x) OR (y`` cannot escape the parentheses that hold it (400 otherwise)."""
    if not limit.strip():
        return query or ""
    if query and query.strip():
        validate_scope_query(query)
    combined = f"({query.strip()}) ({limit})" if query and query.strip() else limit
    if len(combined) > MAX_QUERY_LENGTH:
        raise BadRequest(
            f"query: too long with your groups' access scope added "
            f"(at most {MAX_QUERY_LENGTH} characters)"
        )
    return combined

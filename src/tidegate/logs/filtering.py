"""Which lines a reader asked for: export and live tail share one filter.

``hosts``, ``apps`` and ``levels`` are exact, case-insensitive matches against any of
the listed values; ``tags`` selects lines carrying any of the listed tags (exact,
case-insensitive); ``query`` is the platform's search syntax (``tidegate.search``). A
line is selected when it matches every part that was given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from tidegate.errors import BadRequest
from tidegate.logs.searched import StoredLine
from tidegate.search import Query, QuerySyntaxError, compile_query
from tidegate.search.work import query_work

MAX_LIST_ITEMS = 100


def split_list(raw: str | None, *, name: str) -> frozenset[str]:
    """A comma list (``a,b, c``) as a case-folded set; empty items are ignored."""
    if not raw:
        return frozenset()
    items = frozenset(item.strip().casefold() for item in raw.split(",") if item.strip())
    if len(items) > MAX_LIST_ITEMS:
        raise BadRequest(f"{name}: at most {MAX_LIST_ITEMS} values")
    return items


def parse_line_filter(
    *,
    hosts: str | None,
    apps: str | None,
    levels: str | None,
    query: str | None,
    tags: str | None = None,
    account_id: str | None = None,
    limit_work: bool = True,
) -> LineFilter:
    """The filter of a request's ``hosts``, ``apps``, ``levels``, ``tags`` (comma lists)
    and ``query``; a 400 naming the parameter (and for a query the column) otherwise.
    ``account_id``: the account whose lines it selects (what ``_account:`` tests).
    ``limit_work``: refuse a query past the work limits (tidegate.search.work); off
    only for queries saved before the limits, which must go on matching."""
    text = query.strip() if query and query.strip() else None
    if text is not None and "\x00" in text:
        raise BadRequest("query: must not contain NUL characters")
    try:
        compiled = compile_query(text) if text is not None else None
    except QuerySyntaxError as error:
        raise BadRequest(f"query: {error}") from None
    too_much = query_work(compiled.tree).too_much() if compiled and limit_work else None
    if too_much is not None:
        raise BadRequest(f"query: {too_much}")
    return LineFilter(
        hosts=split_list(hosts, name="hosts"),
        apps=split_list(apps, name="apps"),
        levels=split_list(levels, name="levels"),
        query=compiled,
        tags=split_list(tags, name="tags"),
        account_id=account_id,
    )


@dataclass(frozen=True, slots=True)
class LineFilter:
    hosts: frozenset[str] = frozenset()
    apps: frozenset[str] = frozenset()
    levels: frozenset[str] = frozenset()
    query: Query | None = None
    tags: frozenset[str] = frozenset()
    # The account the lines belong to, for ``_account:<value>`` (``bound_to``).
    account_id: str | None = None

    def bound_to(self, account_id: str) -> LineFilter:
        """This filter, reading the lines of ``account_id``."""
        return replace(self, account_id=account_id)

    @property
    def query_text(self) -> str | None:
        return self.query.text if self.query is not None else None

    @property
    def selects_everything(self) -> bool:
        return not (self.hosts or self.apps or self.levels or self.query or self.tags)

    def matches(
        self,
        *,
        line: str,
        host: str | None,
        app: str | None,
        level: str | None,
        file: str | None,
        meta: Mapping[str, object] | None,
        tags: Sequence[str] | None = None,
    ) -> bool:
        if self.hosts and (host is None or host.casefold() not in self.hosts):
            return False
        if self.apps and (app is None or app.casefold() not in self.apps):
            return False
        if self.levels and (level is None or level.casefold() not in self.levels):
            return False
        if self.tags and not any(
            isinstance(tag, str) and tag.casefold() in self.tags for tag in tags or ()
        ):
            return False
        if self.query is None:
            return True
        return self.query.matches(
            StoredLine(
                line,
                host=host,
                app=app,
                level=level,
                file=file,
                meta=meta,
                account=self.account_id,
            )
        )

"""Exclusion rules compiled for the hot path, and the per-worker cache that holds them.

A rule has up to three parts: ``hosts`` and ``apps`` (lists of names where ``*`` matches
any run of characters, compared case-insensitively against the whole value) and
``query`` (the search syntax, compiled once by ``tidegate.search``). A line is excluded
by a rule when it matches every part the rule gives.

Hosts and apps repeat from line to line, so which rules survive the hosts and apps parts
is worked out once per distinct ``(host, app)`` and remembered; only the survivors'
queries run per line.

The account's active parsing templates (``logs.templates``) travel with its rules: both
are what the account's configuration does to a line at intake, cached together. The
cache is keyed by a fingerprint of the account's rules and templates (the count and
latest ``updated_at`` of each) that the credential lookup reads in the same query, so
every worker sees a change on its next request with no extra round trip and no TTL.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

from tidegate.logs.searched import StoredLine
from tidegate.logs.templates import NO_TEMPLATES, TemplateSet
from tidegate.models import ExclusionRule
from tidegate.search import Query, compile_query


class Verdict(Enum):
    KEEP = 0
    INDEXONLY = 1  # not stored, still shown in live tail
    DROP = 2  # not stored, not shown anywhere


class Wildcards:
    """Matches a whole value against any of ``names``, where ``*`` matches any run of
    characters (none included) and nothing else is special; case-insensitive
    (``str.casefold``).

    No regular expression: a backtracking engine takes exponential time on names such
    as ``*a*a*a*a*b`` (41 s for one 200-character host). A ``*``-only glob is decided
    by one left-to-right scan instead: the part before the first ``*`` is a prefix, the
    part after the last a suffix, and each part in between is found at its leftmost
    place after the previous one. Taking the leftmost place is always safe, since it
    leaves the most room for the parts that follow, so there is never a reason to
    backtrack. Work is bounded by the value's length times the name's length.
    """

    __slots__ = ("_exact", "_globs")

    def __init__(self, names: Iterable[str]) -> None:
        exact: set[str] = set()
        globs: list[tuple[str, tuple[str, ...], str, int]] = []
        for name in names:
            folded = name.casefold()
            if "*" not in folded:
                exact.add(folded)
                continue
            parts = folded.split("*")
            prefix, middle, suffix = parts[0], tuple(p for p in parts[1:-1] if p), parts[-1]
            shortest = len(prefix) + len(suffix) + sum(len(part) for part in middle)
            globs.append((prefix, middle, suffix, shortest))
        self._exact = frozenset(exact)
        self._globs = tuple(globs)

    def matches(self, value: str) -> bool:
        folded = value.casefold()
        if folded in self._exact:
            return True
        size = len(folded)
        for prefix, middle, suffix, shortest in self._globs:
            if size < shortest or not folded.startswith(prefix) or not folded.endswith(suffix):
                continue
            position, end = len(prefix), size - len(suffix)
            for part in middle:
                found = folded.find(part, position, end)
                if found < 0:
                    break
                position = found + len(part)
            else:
                return True
        return False


@dataclass(frozen=True, slots=True)
class CompiledRule:
    rule_id: str
    indexonly: bool
    hosts: Wildcards | None
    apps: Wildcards | None
    query: Query | None

    @classmethod
    def build(
        cls,
        *,
        rule_id: str,
        indexonly: bool,
        hosts: Sequence[str] | None,
        apps: Sequence[str] | None,
        query: str | None,
    ) -> CompiledRule:
        return cls(
            rule_id=rule_id,
            indexonly=indexonly,
            hosts=Wildcards(hosts) if hosts else None,
            apps=Wildcards(apps) if apps else None,
            query=compile_query(query) if query and query.strip() else None,
        )

    def admits(self, host: str, app: str | None) -> bool:
        """Whether the hosts and apps parts (those given) match."""
        if self.hosts is not None and not self.hosts.matches(host):
            return False
        return self.apps is None or (app is not None and self.apps.matches(app))


_MEMO_LIMIT = 4096


class RuleSet:
    """An account's active rules, ready to judge lines, and its active parsing
    templates (``templates``), ready to parse them. Truthy when it has exclusion rules."""

    __slots__ = ("_candidates", "rules", "templates")

    def __init__(
        self, rules: Sequence[CompiledRule], templates: TemplateSet = NO_TEMPLATES
    ) -> None:
        self.templates = templates
        # Rules that drop outright go first: a line they match needs no further look,
        # and a line matched by both kinds must never reach live tail.
        self.rules = tuple(sorted(rules, key=lambda rule: rule.indexonly))
        self._candidates: dict[tuple[str, str | None], tuple[CompiledRule, ...]] = {}

    @classmethod
    def from_rows(
        cls, rows: Iterable[ExclusionRule], templates: TemplateSet = NO_TEMPLATES
    ) -> RuleSet:
        return cls(
            [
                CompiledRule.build(
                    rule_id=row.id,
                    indexonly=row.indexonly,
                    hosts=row.hosts,
                    apps=row.apps,
                    query=row.query,
                )
                for row in rows
                if row.active
            ],
            templates,
        )

    def __bool__(self) -> bool:
        return bool(self.rules)

    def candidates(self, host: str, app: str | None) -> tuple[CompiledRule, ...]:
        key = (host, app)
        found = self._candidates.get(key)
        if found is None:
            if len(self._candidates) >= _MEMO_LIMIT:
                self._candidates.clear()
            found = tuple(rule for rule in self.rules if rule.admits(host, app))
            self._candidates[key] = found
        return found

    def verdict(
        self,
        *,
        line: str,
        host: str,
        app: str | None,
        level: str | None,
        file: str | None,
        meta: Mapping[str, object] | None,
    ) -> Verdict:
        searchable: StoredLine | None = None
        for rule in self.candidates(host, app):
            if rule.query is not None:
                if searchable is None:
                    searchable = StoredLine(
                        line, host=host, app=app, level=level, file=file, meta=meta
                    )
                if not rule.query.matches(searchable):
                    continue
            return Verdict.INDEXONLY if rule.indexonly else Verdict.DROP
        return Verdict.KEEP


EMPTY = RuleSet(())

# (exclusion rule count, their latest updated_at, template count, their latest updated_at)
Fingerprint = tuple[int, object, int, object]


class RuleCache:
    """Compiled rule sets of one worker, by account, each with the fingerprint it was
    compiled at. Bounded: past ``limit`` accounts the oldest entry goes."""

    def __init__(self, limit: int = 10_000) -> None:
        self._limit = limit
        self._entries: dict[str, tuple[Fingerprint, RuleSet]] = {}

    def get(self, account_id: str, fingerprint: Fingerprint) -> RuleSet | None:
        if fingerprint[0] == 0 and fingerprint[2] == 0:
            return EMPTY
        entry = self._entries.get(account_id)
        if entry is None or entry[0] != fingerprint:
            return None
        return entry[1]

    def put(self, account_id: str, fingerprint: Fingerprint, rules: RuleSet) -> None:
        self._entries.pop(account_id, None)
        if len(self._entries) >= self._limit:
            self._entries.pop(next(iter(self._entries)))
        self._entries[account_id] = (fingerprint, rules)

"""A reader's filter (``LineFilter``) as a SQL condition over ``log_lines``.

The condition is always a *guaranteed superset* of what ``LineFilter.matches`` selects:
every line the Python matcher selects satisfies it. ``SqlFilter.exact`` says whether it
is also a subset, so that the candidates need no confirmation in Python. A form SQL
cannot express (case folding of a column without a folded copy, word starts, numeric
comparisons, ``meta`` paths) becomes a weaker condition that still holds for every
matching line, or none at all; the caller confirms candidates with the matcher.

Which form uses which index, and why each rule is safe: docs/search-syntax.md, "How a
query runs in the database".
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass

import orjson
from sqlalchemy import (
    ColumnElement,
    Select,
    and_,
    false,
    func,
    literal_column,
    not_,
    or_,
    select,
    true,
)
from sqlalchemy.sql import operators
from sqlalchemy.sql.elements import BooleanClauseList, False_, True_
from sqlalchemy.sql.expression import column, table

from tidegate.logs.filtering import LineFilter
from tidegate.models import LogLine
from tidegate.search.compiler import (
    BUILTIN_FIELDS,
    PREFIXED_FIELDS,
    RESERVED_FIELDS,
    compile_line,
    meta_path,
)
from tidegate.search.line import LogLine as SearchLine
from tidegate.search.nodes import (
    And,
    Compare,
    Exists,
    Field,
    LineNode,
    Match,
    Not,
    Phrase,
    Term,
    ValueAnd,
    ValueNode,
    ValueNot,
    ValueOr,
)
from tidegate.search.values import parse_number

# ``duckdb``: the segments of the columnar tier (tidegate.logs.segments), whose search
# text is split in two columns, the case-folded line and the case-folded meta JSON text.
DIALECTS = ("sqlite", "postgresql", "duckdb")

# The shortest literal the SQLite trigram index can look up.
MIN_FTS_CHARS = 3
# A literal longer than this is looked up by this many of its trigrams (spread over
# it): any subset of them is still a superset, and a 4,000-character phrase should not
# become a 4,000-way AND.
MAX_FTS_TRIGRAMS = 24

Condition = ColumnElement[bool]

_LOG_SEARCH = table("log_search", column("rowid"))
# A segment's folded line and folded meta JSON text (DuckDB reads it as ``log_lines``).
_SEGMENT = table("log_lines", column("line_folded"), column("meta_folded"))
_SEGMENT_LINE: ColumnElement[str] = _SEGMENT.c.line_folded
_SEGMENT_META: ColumnElement[str] = _SEGMENT.c.meta_folded
# The built-in fields with a case-folded copy (``<name>_folded``, indexed).
_FOLDED = frozenset({"host", "app", "level"})
# DuckDB: the mark on the condition of a literal every selected line holds at a word
# start of a segment column's searched text (a term in the line's searched text, a meta
# value at the start of its JSON value): (column name, the case-folded literal). An
# SQLAlchemy annotation, which leaves the SQL as it is; the segment index
# (tidegate.logs.segment_index) reads it to look the literal's first word up.
STARTS_WORD = "tidegate_starts_word"
_WORD_START = re.compile(r"\w")

# Literals a JSON text may spell differently from the matcher's view of the value
# (``as_text`` of the value as read back): see _Translator.meta_match.
_ESCAPED_IN_JSON = re.compile(r'["\\\x00-\x1f]')
# A float under 1e-4 reads back as '1.5e-05' but orjson wrote '0.000015' (or '1e-7'):
# a literal continuing past the first digit, or a sign and a digit, may not be in it.
_SMALL_FLOAT_PREFIX = re.compile(r"-[1-9]|[1-9][.e]")
# An `==` number that every equal number spells with: integers below 1e15 are written
# n or n.0 (never with an exponent), so 'n' is in the text of each of them.
_PLAIN_INTEGER = re.compile(r"0|-?[1-9][0-9]{0,14}")


# A reserved name's parsed spelling, folded, to the name as a line's text writes it.
_UNPREFIXED = {"_" + name: name for name in PREFIXED_FIELDS}


# A prefix test of a built-in field: (field, case-folded prefix).
FoldedPrefix = tuple[str, str]


@dataclass(frozen=True, slots=True)
class SqlFilter:
    """The SQL form of a ``LineFilter``.

    - ``where``: a condition over ``log_lines`` (None: no condition), true for every line
      the filter selects.
    - ``exact``: ``where`` selects exactly the filter's lines, so candidates need no
      confirmation by ``LineFilter.matches``.
    - ``fts_queries`` (SQLite): the FTS5 MATCH expressions ``where`` uses, for callers
      that check how many rows each one finds (``fts_candidates``) and leave out the
      common ones (``translate(drop_fts=...)``).
    - ``driving_fts`` (SQLite): those of them that every selected line satisfies (top
      level conjuncts of ``where``): ``fts_condition(query)`` of one may drive a scan.
    - ``folded_prefixes``: the prefix tests of host/app/level, for callers that list the
      stored values with each prefix (``folded_value_after``) and have them tested by
      equality (``translate(folded_values=...)``), which SQLite's planner serves better.
    """

    where: Condition | None
    exact: bool
    fts_queries: tuple[str, ...] = ()
    driving_fts: tuple[str, ...] = ()
    folded_prefixes: tuple[FoldedPrefix, ...] = ()


def translate(
    line_filter: LineFilter,
    *,
    dialect: str,
    drop_fts: Collection[str] = (),
    folded_values: Mapping[FoldedPrefix, Collection[str]] | None = None,
) -> SqlFilter:
    """The SQL form of ``line_filter`` for ``dialect`` (``sqlite`` or ``postgresql``).

    ``drop_fts``: FTS5 MATCH expressions (from a previous ``SqlFilter.fts_queries``) to
    leave out, as if their literal could not be looked up; for a literal so common that
    walking the time index and confirming in Python is cheaper than the subquery.
    ``folded_values``: for a prefix test (from ``SqlFilter.folded_prefixes``), every
    stored value of the field that starts with it; the test becomes ``IN (values)``.
    It must list every such value of the lines the caller reads, or lines are missed.
    """
    if dialect not in DIALECTS:
        raise ValueError(f"unsupported dialect {dialect!r}")
    translator = _Translator(
        dialect, frozenset(drop_fts), folded_values or {}, line_filter.account_id
    )
    parts: list[Condition] = []
    for values, folded in (
        (line_filter.hosts, LogLine.host_folded),
        (line_filter.apps, LogLine.app_folded),
        (line_filter.levels, LogLine.level_folded),
    ):
        if values:
            # The lists hold case-folded values already; equality is the exact test.
            parts.append(folded.in_(sorted(values)))
    exact = True
    if line_filter.query is not None:
        condition, query_exact = translator.line(line_filter.query.tree)
        parts.append(condition)
        exact = query_exact
    if line_filter.tags:
        # Tags are a JSON list per line with no index: the matcher confirms them.
        exact = False
    where = _all(parts)
    driving = [translator.fts_query_of(part) for part in _conjuncts(where)]
    return SqlFilter(
        where=None if isinstance(where, True_) else where,
        exact=exact,
        fts_queries=tuple(dict.fromkeys(query for _, query in translator.fts_of.values())),
        driving_fts=tuple(dict.fromkeys(query for query in driving if query is not None)),
        folded_prefixes=tuple(dict.fromkeys(translator.folded_prefixes)),
    )


def _conjuncts(condition: Condition) -> Iterator[Condition]:
    if isinstance(condition, BooleanClauseList) and condition.operator is operators.and_:
        for clause in condition.clauses:
            yield from _conjuncts(clause)
    else:
        yield condition


# A translated node: its condition and whether that condition is exact.
Translated = tuple[Condition, bool]
_SUPERSET_OF_ALL: Translated = (true(), False)


def _all(conditions: Collection[Condition]) -> Condition:
    """AND, with TRUE and FALSE folded away (SQLAlchemy's and_ keeps some of them)."""
    kept = [condition for condition in conditions if not isinstance(condition, True_)]
    if any(isinstance(condition, False_) for condition in kept):
        return false()
    if not kept:
        return true()
    return kept[0] if len(kept) == 1 else and_(*kept)


def _any(conditions: Collection[Condition]) -> Condition:
    """OR, with TRUE and FALSE folded away."""
    kept = [condition for condition in conditions if not isinstance(condition, False_)]
    if any(isinstance(condition, True_) for condition in kept):
        return true()
    if not kept:
        return false()
    return kept[0] if len(kept) == 1 else or_(*kept)


def _negate(condition: Condition) -> Condition:
    """NOT that is true where ``condition`` is false *or NULL*: SQL's NOT of a NULL is
    NULL, but the matcher's ``-app:x`` is true for a line without ``app``."""
    if isinstance(condition, True_):
        return false()
    if isinstance(condition, False_):
        return true()
    return not_(func.coalesce(condition, false()))


def _successor(prefix: str) -> str | None:
    """The smallest string greater than every string starting with ``prefix`` in code
    point order (None: there is none), for a prefix test as a range."""
    chars = list(prefix)
    while chars:
        code = ord(chars.pop()) + 1
        if 0xD800 <= code <= 0xDFFF:
            code = 0xE000  # surrogates cannot be stored; the next character is U+E000
        if code <= 0x10FFFF:
            return "".join(chars) + chr(code)
    return None


def _starts_with_range(folded: ColumnElement[str], prefix: str) -> Condition:
    """``folded`` starts with ``prefix``, as a range over the index (folded columns
    compare in code point order on both backends)."""
    upper = _successor(prefix)
    lower: Condition = folded >= prefix
    return lower if upper is None else _all((lower, folded < upper))


class _Translator:
    def __init__(
        self,
        dialect: str,
        drop_fts: frozenset[str],
        folded_values: Mapping[FoldedPrefix, Collection[str]],
        account_id: str | None,
    ) -> None:
        self.dialect = dialect
        self.account_id = account_id
        self.drop_fts = drop_fts
        self.folded_values = folded_values
        # Each lookup condition made and its FTS5 query, by the condition's id(). The
        # condition is kept too: a condition dropped under a NOT would otherwise be freed
        # and its id() reused by a later one, which would then pass for a lookup.
        self.fts_of: dict[int, tuple[Condition, str]] = {}
        self.folded_prefixes: list[FoldedPrefix] = []

    # -- line nodes -------------------------------------------------------------------

    def line(self, node: LineNode) -> Translated:
        if isinstance(node, Term | Phrase):
            # A word start (Term) or a substring (Phrase) of the case-folded line is a
            # substring of the search text, which starts with the case-folded line (DuckDB
            # holds the folded line as a column of its own). A parsed line's message (what
            # the matcher searches, ``logs.searched``) is in the line as written or as its
            # JSON (or logfmt) spells it: a literal with a character JSON escapes (a quote,
            # a backslash, a control character) is looked for both ways. Never exact: the
            # matcher searches only a parsed line's message, so text elsewhere in it is a
            # candidate only.
            folded = node.text.casefold()
            escaped = orjson.dumps(folded).decode()[1:-1]
            found = [self.contains(text, part="line") for text in dict.fromkeys((folded, escaped))]
            if self.dialect == "duckdb" and not folded.isascii():
                found.append(_SEGMENT_LINE.like(_unicode_escaped_pattern(folded), escape="\\"))
            condition = found[0] if len(found) == 1 else _any(found)
            if isinstance(node, Term):
                # The matcher finds a term where no word character is right before it.
                condition = self.starts_word(condition, folded, part="line")
            return condition, False
        if isinstance(node, Field):
            return self.field(node)
        if isinstance(node, Not):
            inner, exact = self.line(node.operand)
            # Only an exact condition can be negated: NOT of a superset is a subset.
            return (_negate(inner), True) if exact else _SUPERSET_OF_ALL
        parts = [self.line(operand) for operand in node.operands]
        conditions = [condition for condition, _ in parts]
        exact = all(part_exact for _, part_exact in parts)
        if isinstance(node, And):
            return _all(conditions), exact
        return _any(conditions), exact

    def field(self, node: Field) -> Translated:
        if node.name not in BUILTIN_FIELDS:
            return self.meta_field(node), False
        if node.name == "_account":
            # Every line read belongs to the filter's account: the test is decided here,
            # by the matcher itself, on that account's id.
            account = SearchLine("", account=self.account_id)
            return (true() if compile_line(node)(account) else false()), True
        if node.name == "_line":
            return self.line_text(node.test)
        name = RESERVED_FIELDS.get(node.name, node.name)
        if name in ("source", "namespace"):
            return false(), True  # never set on stored lines
        columns = LogLine.__table__.c
        original: ColumnElement[str] = columns[name]
        folded = columns[f"{name}_folded"] if name in _FOLDED else None
        test, exact = self.builtin_value(name, node.test, original, folded)
        # A missing field matches nothing (``host`` is never missing). Tested on the
        # folded copy where there is one (null exactly when the field is), so the
        # folded index alone can answer the query.
        present = (
            true() if name == "host" else (original if folded is None else folded).is_not(None)
        )
        return _all((present, test)), exact

    def line_text(self, node: ValueNode) -> Translated:
        """``_line:``: a test of the line text. Whatever the modifier, a line whose text
        starts with (or equals) the literal has the folded literal in its search text,
        which starts with the case-folded line."""
        if isinstance(node, Exists):
            return true(), True  # every line has a text
        if isinstance(node, Match):
            return self.contains(node.value.casefold(), part="line"), False
        if isinstance(node, ValueAnd | ValueOr):
            conditions = [self.line_text(operand)[0] for operand in node.operands]
            return (_all(conditions) if isinstance(node, ValueAnd) else _any(conditions)), False
        return _SUPERSET_OF_ALL  # comparisons, negations: the matcher decides

    def builtin_value(
        self,
        name: str,
        node: ValueNode,
        original: ColumnElement[str],
        folded: ColumnElement[str] | None,
    ) -> Translated:
        """A test of a built-in field's value (a string; the caller tests presence)."""
        if isinstance(node, Exists):
            return true(), True
        if isinstance(node, Compare):
            return _SUPERSET_OF_ALL  # a number spelled in text: not worth SQL
        if isinstance(node, Match):
            return self.builtin_match(name, node, original, folded)
        if isinstance(node, ValueNot):
            inner, exact = self.builtin_value(name, node.operand, original, folded)
            return (_negate(inner), True) if exact else _SUPERSET_OF_ALL
        parts = [self.builtin_value(name, operand, original, folded) for operand in node.operands]
        conditions = [condition for condition, _ in parts]
        exact = all(part_exact for _, part_exact in parts)
        if isinstance(node, ValueAnd):
            return _all(conditions), exact
        return _any(conditions), exact

    def builtin_match(
        self,
        name: str,
        node: Match,
        original: ColumnElement[str],
        folded: ColumnElement[str] | None,
    ) -> Translated:
        value = node.value
        # Case-sensitive: the original column. casefold() works per character, so a
        # case-sensitive match implies the case-insensitive one, and the folded test
        # (served by the index) can lead.
        sensitive: Condition | None = None
        if node.case_sensitive:
            sensitive = (
                original == value
                if node.exact
                else func.substr(original, 1, len(value)) == value  # counts characters
            )
        if folded is None:
            # ``file`` has no folded copy: only the case-sensitive forms are exact.
            return (sensitive, True) if sensitive is not None else _SUPERSET_OF_ALL
        target = value.casefold()
        if node.exact:
            test = folded == target
        else:
            self.folded_prefixes.append((name, target))
            values = self.folded_values.get((name, target))
            if values is None:
                test = _starts_with_range(folded, target)
            else:
                test = folded.in_(sorted(values)) if values else false()
        return (test if sensitive is None else _all((test, sensitive))), True

    def meta_field(self, node: Field) -> Condition:
        """A superset for a field in ``meta``: its key and its value literals appear in
        the search text (which holds the meta as JSON text, case-folded)."""
        path = meta_path(node.name)
        key = self.key_condition(path[-1]) if path else true()
        return _all((key, self.meta_value(node.test)))

    def key_condition(self, key: str) -> Condition:
        """The value sits under ``"key"`` (nested) or ``"a.b.key"`` (a flattened dotted
        key, tried first by the matcher): either way the JSON text holds ``key"``."""
        if _ESCAPED_IN_JSON.search(key):
            return true()  # spelled with escapes in the JSON text
        folded = key.casefold()
        # A reserved name's parsed copy (``_status``, ``__source``) is looked for
        # without its ``_``: a line whose text holds its meta as the text wrote it
        # (``"status":``) is indexed by its text alone (``store.meta_in_line``).
        # ``status"`` is in ``_status"`` too.
        return self.contains(_UNPREFIXED.get(folded, folded) + '"', part="meta")

    def meta_value(self, node: ValueNode) -> Condition:
        if isinstance(node, Match):
            return self.meta_match(node)
        if isinstance(node, ValueAnd):
            # An array matches when one element passes the whole group: that element's
            # JSON text holds every literal.
            return _all([self.meta_value(operand) for operand in node.operands])
        if isinstance(node, ValueOr):
            return _any([self.meta_value(operand) for operand in node.operands])
        return true()  # Exists, Compare, ValueNot: the key is all there is

    def meta_match(self, node: Match) -> Condition:
        """The search text holds the value's JSON spelling; when it surely holds the
        literal too, that literal is the condition."""
        literal = node.value.casefold()
        if node.exact and parse_number(node.value) is not None:
            # Compared numerically: 4e2 and 400.0 equal 400. Only a plain integer is
            # spelled within every equal number's JSON text.
            if _PLAIN_INTEGER.fullmatch(node.value) is None:
                return true()
        if not literal or _ESCAPED_IN_JSON.search(literal):
            # "" matches every value; '"', '\' and control characters are escaped in
            # JSON text, so the text does not hold them as written.
            return true()
        if _SMALL_FLOAT_PREFIX.match(literal):
            return true()
        # The literal starts the value's JSON text: after '"', ':', ',' or '['.
        return self.starts_word(self.contains(literal, part="meta"), literal, part="meta")

    def starts_word(self, condition: Condition, literal: str, *, part: str) -> Condition:
        """DuckDB: ``condition`` marked (``STARTS_WORD``) as a test of a literal every
        selected line holds at a word start of its searched text (``part``)."""
        if self.dialect != "duckdb" or _WORD_START.match(literal) is None:
            return condition
        column = "line_folded" if part == "line" else "meta_folded"
        return condition._annotate({STARTS_WORD: (column, literal)})

    # -- the search text -------------------------------------------------------------

    def contains(self, literal: str, *, part: str) -> Condition:
        """The search text contains ``literal`` (already case-folded), or a superset."""
        if self.dialect == "duckdb":
            # ``part``: where the literal must be, the line's text or its meta.
            folded = _SEGMENT_LINE if part == "line" else _SEGMENT_META
            return folded.like("%" + _escape_like(literal) + "%", escape="\\")
        if self.dialect == "postgresql":
            return _search_column().like("%" + _escape_like(literal) + "%", escape="\\")
        if len(literal) < MIN_FTS_CHARS:
            return true()
        query = fts_query(literal)
        if query in self.drop_fts:
            return true()
        condition = fts_condition(query)
        self.fts_of[id(condition)] = (condition, query)
        return condition

    def fts_query_of(self, condition: Condition) -> str | None:
        """The FTS5 query of ``condition`` when it is one of the lookups made."""
        made = self.fts_of.get(id(condition))
        return made[1] if made is not None and made[0] is condition else None


def fts_condition(fts_query: str) -> Condition:
    """SQLite: the line is among the rows an FTS5 MATCH finds."""
    found = select(_LOG_SEARCH.c.rowid).where(literal_column("log_search").match(fts_query))
    return LogLine.id.in_(found)


def folded_value_after(
    *, account_id: str, prefix: FoldedPrefix, after: str | None
) -> Select[str | None]:
    """The smallest value of the field (folded) of the account's lines that starts with
    the prefix and comes after ``after`` (None: the first one): one seek of the index
    led by (account_id, <field>_folded). Called again with each answer, it lists the
    values for ``translate(folded_values=...)``."""
    field, start = prefix
    folded: ColumnElement[str] = LogLine.__table__.c[f"{field}_folded"]
    conditions = [
        LogLine.account_id == account_id,
        folded >= start if after is None else folded > after,
    ]
    upper = _successor(start)
    if upper is not None:
        conditions.append(folded < upper)
    return select(func.min(folded)).where(*conditions)


def fts_candidates(fts_query: str, *, limit: int) -> Select[int]:
    """SQLite: how many rows (of every account) one FTS5 MATCH of ``fts_queries``
    selects, counted up to ``limit``: the size of its subquery, at a bounded price."""
    found = (
        select(_LOG_SEARCH.c.rowid)
        .where(literal_column("log_search").match(fts_query))
        .limit(limit)
        .subquery()
    )
    return select(func.count()).select_from(found)


def fts_query(literal: str) -> str:
    """The FTS5 query for a literal of 3+ characters: the AND of its trigrams (the
    index has no positions, detail=none), each a string with ``"`` doubled."""
    trigrams = list(dict.fromkeys(literal[i : i + 3] for i in range(len(literal) - 2)))
    if len(trigrams) > MAX_FTS_TRIGRAMS:
        step = (len(trigrams) - 1) / (MAX_FTS_TRIGRAMS - 1)
        trigrams = [trigrams[round(i * step)] for i in range(MAX_FTS_TRIGRAMS)]
    return " AND ".join('"' + trigram.replace('"', '""') + '"' for trigram in trigrams)


def _unicode_escaped_pattern(folded: str) -> str:
    r"""A LIKE pattern for ``folded`` as a JSON text that escapes what is beyond ASCII
    (``caf\u00e9``: Python's ``json.dumps``, Jackson's escaping), whatever the case of
    the escaped letter (the line is folded, its escapes are not: ``CAF\u00c9`` holds
    ``café`` in any case): each such character is any ``\uXXXX`` escape (two for one
    beyond the BMP). A segment's text holds the message so; the row store's search text
    holds the meta, where it is written as it reads."""
    parts = []
    for char in folded:
        if char.isascii():
            parts.append(_escape_like(orjson.dumps(char).decode()[1:-1]))
        else:
            parts.append("\\\\u____" * (2 if ord(char) > 0xFFFF else 1))
    return "%" + "".join(parts) + "%"


def _escape_like(literal: str) -> str:
    return literal.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _search_column() -> ColumnElement[str]:
    search: ColumnElement[str] = LogLine.__table__.c.search
    return search

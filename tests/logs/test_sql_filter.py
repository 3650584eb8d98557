"""The SQL form of a filter selects what the Python matcher selects, on both backends.

Lines are stored through the store's own write path (tidegate.logs.store) in a real,
migrated database; queries are generated from a grammar over a small alphabet full of
case-folding traps (ß, the long s, the Kelvin sign, İ, a combining mark), JSON escapes and
number spellings. For every query: the SQL condition selects every line the matcher
selects (a superset), exactly those lines when it says it is exact, and the export's
path (SQL, then the matcher on the candidates when inexact) selects exactly them.
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from sqlalchemy import select
from tests.conftest import AppClient
from tests.export.helpers import BASE_MS, export_all, now_ms
from tests.factories import AccountCtx, make_account, make_tenant
from tests.property_sizes import examples

from tidegate.db.engine import Database
from tidegate.errors import BadRequest
from tidegate.export.service import segment_filter
from tidegate.logs import filter_plan, read_queries, segment_index, segment_lookup
from tidegate.logs.compactor import (
    CompactorConfig,
    compact_round,
    compactor_columns,
    release,
    write_rows,
)
from tidegate.logs.filtering import LineFilter, parse_line_filter
from tidegate.logs.read_queries import LineRow
from tidegate.logs.reading import SegmentStatements
from tidegate.logs.segments import LINE_COLUMNS, RowRanges, SegmentFile
from tidegate.logs.sql_filter import SqlFilter, translate
from tidegate.logs.store import NewLine, document_json, store_lines
from tidegate.logs.tiers import located, segment_query
from tidegate.models import LogLine as LogLineModel
from tidegate.search.compiler import PREFIXED_FIELDS

# -- lines ------------------------------------------------------------------------------

# Words that case-fold into one another (ß/ss/SS, the long s/s, the Kelvin sign/k, İ/i + a
# combining dot), JSON escapes, number spellings: lines and queries share them, so that
# queries match often and every rule is exercised.
WORDS = [
    "ab", "Ab", "AB", "ß", "ss", "SS", "\u017fs", "straße", "STRASSE", "\u212aa", "ka", "İx",
    "i\u0307x", "ix", "e_1", "a-b", "4e2", "400", "1.5", 'x"y', "x\\y", "true",
    # Words as long as the segment index's word prefixes (six characters and more), one
    # inside another, so that it is asked where a word starts.
    "quarantined", "unquarantined", "Straßenbahn", "STRASSENBAHN", "e_1quarantined",
]  # fmt: skip
CHARS = ["ß", "\u017f", "\u212a", "İ", "\u0307", "s", "S", "k", "a", "e", "1", "_", "-", ".", "+"]
WORD = st.one_of(
    st.sampled_from(WORDS), st.lists(st.sampled_from(CHARS), min_size=1, max_size=3).map("".join)
)
# A query literal: mostly a prefix of a word the lines use.
PREFIX = st.sampled_from(WORDS).flatmap(
    lambda word: st.integers(min_value=1, max_value=len(word)).map(lambda n: word[:n])
)
SEPARATOR = st.sampled_from([" ", "-", ".", "_", ": ", '"', "\\", "\t", "/"])
TEXT = st.lists(st.tuples(WORD, SEPARATOR), min_size=1, max_size=3).map(
    lambda parts: "".join(word + separator for word, separator in parts)
)
NUMBERS = [
    0, 4, 40, 400, -5, 12345678901234567,
    400.0, 1.5, -0.0, 0.5, 1e16, 1.5e16, -2.5e20, 1.5e-5, 1e-7, 0.0001, 4e-300, 1e300,
]  # fmt: skip
SCALAR = st.one_of(WORD, TEXT, st.sampled_from(NUMBERS), st.booleans(), st.none())
# ``status`` and ``_status``: a query for a reserved name tests both spellings (and
# ``__source`` is how a parsed ``_source`` is stored); ``message`` is what bare terms
# search in a line that holds it.
META_KEYS = [
    "a", "b", "a.b", "St", "\u017ft", "k", 'q"', "status", "_status", "__source", "message",
]  # fmt: skip
META_VALUE = st.recursive(
    SCALAR,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(META_KEYS), inner, max_size=2),
    ),
    max_leaves=4,
)
META = st.one_of(
    st.none(),
    st.builds(
        lambda first, rest: {"a": first, **rest},
        META_VALUE,
        st.dictionaries(st.sampled_from(META_KEYS), META_VALUE, max_size=2),
    ),
)
FIELD_WORD = st.one_of(st.sampled_from(WORDS), WORD)
OPTIONAL_WORD = st.sampled_from([False, True, True, True]).flatmap(
    lambda present: FIELD_WORD if present else st.none()
)
QUERY_WORD = st.one_of(PREFIX, WORD).filter(lambda word: word not in ("AND", "OR"))


def as_the_text_wrote_it(meta: dict[str, Any]) -> str:
    """The meta's JSON text as a JSON line that was parsed into it spells it: its
    reserved top-level names without the ``_`` parsing gave them (``"status":`` for
    ``_status``), so that the line holds its meta and is indexed by its text alone."""
    plain = {}
    for key, value in meta.items():
        name = key[1:] if key[1:] in PREFIXED_FIELDS and key[1:] not in meta else key
        plain[name] = value
    return str(document_json(plain))


@st.composite
def log_line(draw: st.DrawFn) -> NewLine:
    meta = draw(META)
    if meta is not None and draw(st.booleans()):
        # A line whose text holds its meta (a JSON line, parsed): the search text leaves
        # the meta out (``store.meta_in_line``).
        around = st.sampled_from(["", "ab ", "\u017ft: ", " ß"])
        line = draw(around) + as_the_text_wrote_it(meta) + draw(around)
    else:
        line = draw(TEXT)
    return NewLine(
        line=line,
        ts=0,  # placed in the example's own window when stored
        host=draw(FIELD_WORD),
        app=draw(OPTIONAL_WORD),
        level=draw(OPTIONAL_WORD),
        file=draw(OPTIONAL_WORD),
        meta=meta,
    )


@st.composite
def log_lines(draw: st.DrawFn) -> list[NewLine]:
    return [draw(log_line()) for _ in range(draw(st.integers(min_value=1, max_value=8)))]


# -- queries ----------------------------------------------------------------------------


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


LITERALS = [
    "400", "4e2", "400.0", "1e16", "1e+16", "1.5e-05", "1.5", "1.", "1e", "-1", "-0", "15",
    "10", "1", "0", "0.0", "tru", "true", "fa", "nul", "-", "e+",
]  # fmt: skip
# Unquoted values: no whitespace, quotes, colons, parentheses, brackets or commas.
VALUE_TEXT = st.one_of(QUERY_WORD, st.sampled_from(LITERALS)).filter(
    lambda text: not any(char in text for char in ' \t"\\:()[],')
)
FIELD_NAME = st.sampled_from(
    ["host", "app", "app", "level", "file", "source", "a", "a", "b", "a.b", "meta.a", "meta", "k",
     "_account", "_host", "_app", "_file", "_line", "status", "_status", "status.a",
     "_source", "__source", "message"]
)  # fmt: skip
MODIFIER = st.sampled_from(["", "=", "==", "==="])
NUMBER = st.sampled_from(["0", "4", "400", "-5", "1.5", "1e3", "1e16", "0.0001"])


def value_expressions() -> st.SearchStrategy[str]:
    leaf = st.one_of(
        st.tuples(MODIFIER, VALUE_TEXT).map(lambda parts: parts[0] + parts[1]),
        st.tuples(MODIFIER, st.one_of(QUERY_WORD, TEXT)).map(
            lambda parts: parts[0] + _quote(parts[1])
        ),
        st.tuples(st.sampled_from([">", ">=", "<", "<="]), NUMBER).map("".join),
    )
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            inner.map(lambda value: f"-{value}"),
            st.lists(inner, min_size=2, max_size=3).map(lambda values: " ".join(values)),
            st.lists(inner, min_size=2, max_size=3).map(lambda values: " OR ".join(values)),
        ).map(lambda group: f"({group})"),
        max_leaves=2,
    )


FIELD_VALUE = st.one_of(
    value_expressions(),
    st.just("*"),
    st.tuples(MODIFIER, st.lists(VALUE_TEXT, min_size=1, max_size=3)).map(
        lambda parts: parts[0] + "[" + ",".join(parts[1]) + "]"
    ),
)
LEAVES = {
    "field": st.tuples(FIELD_NAME, FIELD_VALUE).map(":".join),
    "term": VALUE_TEXT.filter(lambda word: not word.startswith("-")),
    "phrase": st.one_of(QUERY_WORD, TEXT).filter(str.strip).map(_quote),
}
# Fields twice as often as terms or phrases: they have the most rules. (one_of would
# favour its first branch.)
LINE_LEAF = st.sampled_from(["field", "field", "term", "phrase"]).flatmap(LEAVES.__getitem__)


def line_expressions(leaf: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            inner.map(lambda query: f"-{query}"),
            st.lists(inner, min_size=2, max_size=3).map(lambda parts: "(" + " ".join(parts) + ")"),
            st.lists(inner, min_size=2, max_size=3).map(
                lambda parts: "(" + " OR ".join(parts) + ")"
            ),
        ),
        max_leaves=3,
    )


# Queries of built-in fields only are mostly exact: their every line is checked both
# ways, not only as a superset.
BUILTIN_FIELD = st.tuples(
    st.sampled_from(["host", "app", "level", "file", "_account", "_app", "_line"]), FIELD_VALUE
).map(":".join)
QUERY = st.one_of(line_expressions(LINE_LEAF), line_expressions(BUILTIN_FIELD))


def sometimes(strategy: st.SearchStrategy[str]) -> st.SearchStrategy[str | None]:
    """``strategy`` one time in five, else None."""
    return st.integers(min_value=0, max_value=4).flatmap(
        lambda n: strategy if n == 0 else st.none()
    )


LIST = sometimes(st.lists(VALUE_TEXT, min_size=1, max_size=2).map(",".join))


@dataclass(frozen=True)
class Filter:
    query: str | None
    hosts: str | None = None
    apps: str | None = None
    levels: str | None = None

    def parse(self) -> LineFilter | None:
        try:
            return parse_line_filter(
                hosts=self.hosts, apps=self.apps, levels=self.levels, query=self.query
            )
        except BadRequest:
            return None


FILTERS = st.builds(Filter, query=QUERY, hosts=LIST, apps=LIST, levels=LIST)

# -- the databases ----------------------------------------------------------------------


@dataclass
class Store:
    db: Database
    account: AccountCtx
    client: AppClient
    dialect: str
    windows: itertools.count[int]

    @property
    def account_id(self) -> str:
        return self.account.account_id

    async def add(self, lines: list[NewLine]) -> tuple[int, int]:
        """Stores ``lines`` in a time window of their own; returns the window."""
        start = BASE_MS + next(self.windows) * 1_000
        for offset, line in enumerate(lines):
            line.ts = start + offset
        async with self.db.write_sessions() as session:
            # Received now: the app's retention job drops what was received long ago.
            await store_lines(
                session=session, account_id=self.account_id, lines=lines, received_ms=now_ms()
            )
            await session.commit()
        return start, start + 999

    async def rows(self, window: tuple[int, int], sql: SqlFilter | None) -> list[LineRow]:
        statement = read_queries.scan_lines(
            account_id=self.account_id,
            from_ms=window[0],
            to_ms=window[1],
            max_id=2**62,
            after=None,
            newest_first=False,
            limit=1_000,
            where=None if sql is None else sql.where,
        )
        async with self.db.read_sessions() as session:
            return [LineRow(*row) for row in (await session.execute(statement)).all()]

    async def export(self, window: tuple[int, int], case: Filter) -> list[str]:
        """The ids ``GET /v2/export`` returns, all pages."""
        params = {"hosts": case.hosts, "apps": case.apps, "levels": case.levels}
        lines, _pages = await export_all(
            self.client,
            self.account.headers,
            query=case.query,
            size=3,
            **{"from": window[0], "to": window[1]},
            **params,
        )
        return [line["_id"] for line in lines]


@pytest.fixture(scope="module")
async def store(client: AppClient) -> AsyncIterator[Store]:
    account = await make_account(client, await make_tenant(client.database_url))
    dialect = "sqlite" if client.database_url.startswith("sqlite") else "postgresql"
    db = Database.connect(client.database_url)
    try:
        yield Store(db, account, client, dialect, itertools.count())
    finally:
        await db.dispose()


@pytest.fixture(params=["as-configured", "nearly-all-common"])
def common_rows(request: pytest.FixtureRequest, store: Store) -> Iterator[int]:
    """The export's threshold past which an FTS5 literal is left to the matcher: as
    configured, and 2 (nearly every literal of these small lines, on SQLite)."""
    if request.param == "as-configured":
        yield filter_plan.COMMON_FTS_ROWS
        return
    if store.dialect == "postgresql":
        pytest.skip("only SQLite looks literals up in FTS5")
    saved, filter_plan.COMMON_FTS_ROWS = filter_plan.COMMON_FTS_ROWS, 2
    try:
        yield 2
    finally:
        filter_plan.COMMON_FTS_ROWS = saved


def _matches(line_filter: LineFilter, row: LineRow) -> bool:
    return line_filter.matches(
        line=row.line, host=row.host, app=row.app, level=row.level, file=row.file, meta=row.meta()
    )


def segment_rows(files: list[str], sql: SqlFilter, rows: RowRanges | None = None) -> list[LineRow]:
    """The candidates DuckDB selects from the segment files (``rows``: of files narrowed
    by the segment index, the row ranges read)."""
    return [
        LineRow(*row)
        for row in segment_query(
            SegmentStatements(budget_s=0),
            files,
            columns=", ".join(LINE_COLUMNS),
            where=sql.where,
            from_ms=-(2**62),
            to_ms=2**62,
            max_id=2**62,
            rows=rows,
        )
    ]


def indexed_rows(segment: Segment, sql: SqlFilter) -> list[LineRow]:
    """The candidates DuckDB selects from the row groups of the segment its index does
    not rule out (as ``tiers.searched`` narrows a read's files)."""
    path, lines, filters = segment
    index = segment_index.parse(filters)
    assert index is not None
    assert index.lines == lines
    found = segment_lookup.lookup(sql.where)
    if found is None:
        return segment_rows([path], sql)
    file = SegmentFile(path, -(2**62), 2**62, lines, locate=lambda: path)
    narrowed, candidates = segment_lookup.narrow(file, index, found)
    event(
        "the index ruled out every row group"
        if narrowed is None
        else "the index ruled out some row groups"
        if candidates < len(index.blocks)
        else "the index ruled out no row group"
    )
    if narrowed is None:
        return []
    paths, rows = located([narrowed])
    return segment_rows(paths, sql, rows)


# A segment written by ``as_segment``: its file, its lines and its index.
Segment = tuple[str, int, bytes]


async def as_segment(store: Store, window: tuple[int, int], directory: Path) -> Segment:
    """The window's lines written as a segment, as the compactor writes one, in row
    groups of one line (so that the index has row groups to rule out)."""
    statement = (
        select(*compactor_columns(store.dialect))
        .where(
            LogLineModel.account_id == store.account_id,
            LogLineModel.ts >= window[0],
            LogLineModel.ts <= window[1],
        )
        .order_by(LogLineModel.id)
    )
    async with store.db.read_sessions() as session:
        rows = [tuple(row) for row in (await session.execute(statement)).all()]
    name = f"{store.account_id}/{window[0]}-{rows[0][0]}.parquet"
    _size, _bounds, filters = await asyncio.to_thread(
        write_rows, directory, name, rows, store.dialect, row_group_lines=1
    )
    return str(directory / name), len(rows), filters


async def check(store: Store, lines: list[NewLine], filters: list[Filter], directory: Path) -> None:
    window = await store.add(lines)
    stored = await store.rows(window, None)
    assert len(stored) == len(lines)
    segment = await as_segment(store, window, directory)
    for case in filters:
        parsed = case.parse()
        if parsed is None:
            continue
        # As export binds it: the lines read are the account's (``_account:``).
        line_filter = parsed.bound_to(store.account_id)
        # What the matcher selects, on the lines as they read back (as export sees them).
        expected = {row.id for row in stored if _matches(line_filter, row)}
        event("some lines match" if expected else "no line matches")
        translations = [translate(line_filter, dialect=store.dialect)]
        if translations[0].fts_queries:  # the common-literal strategy: leaves dropped
            translations.append(
                translate(line_filter, dialect=store.dialect, drop_fts=translations[0].fts_queries)
            )
        for sql in translations:
            candidates = await store.rows(window, sql)
            found = {row.id for row in candidates}
            assert expected <= found, (case, "a matching line was not selected")
            if sql.exact:
                assert found == expected, (case, "exact, but selected a line that does not match")
            confirmed = {row.id for row in candidates if _matches(line_filter, row)}
            assert confirmed == expected
        # The export: the same, in pages, with its choices of plan (SQLite: literals too
        # common to look up, the rarest one driving the scan, prefixes listed).
        exported = await store.export(window, case)
        assert len(exported) == len(set(exported)), (case, "a line exported twice")
        assert {int(line_id) for line_id in exported} == expected, case
        # The segments' dialect (DuckDB over the same lines as a Parquet segment): the
        # same contract, superset and exact where it says so.
        cold = segment_filter(line_filter)
        found = {row.id for row in segment_rows([segment[0]], cold)}
        assert expected <= found, (case, "a matching line was not selected by DuckDB")
        if cold.exact:
            assert found == expected, (case, "DuckDB: exact, but selected a non-match")
        # Read through the segment index: the row groups it rules out hold no matching
        # line, and none of an exact condition's (it looks a term's or a meta value's
        # first word up where the matcher finds it, which DuckDB's LIKE does not ask).
        indexed = {row.id for row in indexed_rows(segment, cold)}
        assert expected <= indexed <= found, (case, "the index ruled out a match")
        if cold.exact:
            assert indexed == found, (case, "the index changed an exact answer")


def _line(line: str = "x", **fields: Any) -> NewLine:
    return NewLine(line=line, ts=0, host=fields.pop("host", "h"), **fields)


@settings(
    max_examples=examples(300),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(lines=log_lines(), filters=st.lists(FILTERS, min_size=1, max_size=4))
# A line that holds its meta (a parsed JSON line) is indexed by its text alone: a
# reserved name's parsed key (``_status``, ``__source``) is found as the text wrote it.
@example(
    lines=[
        _line(
            'x {"status":200,"_source":"K8s","message":"Ab \\"ß"}',
            meta={"_status": 200, "__source": "K8s", "message": 'Ab "ß'},
        ),
        _line('{"status":200}', meta={"_status": 200, "k": 1}),
    ],
    filters=[
        Filter("_status:200 __source:k8s"),
        Filter("status:200 _source:k8s"),
        Filter('"b \\"ss" message:ab'),
        Filter("k:* OR x"),
    ],
)
# A float of 1e16 or more is stored as the integer it is (jsonb reads it back so too).
@example(lines=[_line(meta={"a": 1.5e16})], filters=[Filter("a:15"), Filter("a:==15e15")])
# Below 1e-4 Python spells '1.5e-05' where orjson wrote '0.000015'.
@example(lines=[_line(meta={"a": [1.5e-5, -1e-7]})], filters=[Filter("a:1.5"), Filter("a:-1")])
@example(lines=[_line(meta={"a": 400.0, "b": 400})], filters=[Filter("a:==400 b:==400.0")])
@example(lines=[_line(meta={"a.b": True, "k": None})], filters=[Filter("a.b:tru -k:*")])
@example(lines=[_line(app="STRAẞE")], filters=[Filter(None, apps="straße"), Filter(None)])
# Case-sensitive forms also test the original column; insensitive ones the folded one.
@example(
    lines=[_line(app="SS", file="Ab"), _line(app="ß", file="ab")],
    filters=[Filter("app:ß"), Filter("app:=ß"), Filter("app:===SS"), Filter("file:=a")],
)
# JSON escapes '"' and '\\': a literal holding them is not in the JSON text as written.
@example(lines=[_line(meta={"a": ['x"y', "x\\y"]})], filters=[Filter('a:"x\\"" a:"x\\\\"')])
@example(lines=[_line(meta={"a": "x"})], filters=[Filter("a:(-y)"), Filter("-a:y")])
@example(
    lines=[_line("STRA\u017fSE \u212aelvin", app="İx", level=None)],
    filters=[
        Filter('strasse kelvin straß "\u017fs"'),
        Filter("-level:x app:=İ"),
        Filter('app:"i̇"'),
    ],
)
# The reserved fields: every line has an account and a text.
@example(
    lines=[_line("Ab x", app="ab"), _line("x ab", file="Ab")],
    filters=[
        Filter("_account:*"),
        Filter("-_account:*"),
        Filter("_line:ab"),
        Filter("_line:=Ab -_app:x"),
        Filter("_line:(* -x)"),
        Filter("_file:==ab OR _host:h"),
    ],
)
# A phrase and a meta value's text found inside a word: the segment index looks up the
# words that start inside them only (a term's and a meta value's first word too: they
# start one).
@example(
    lines=[_line("unquarantined x", meta={"a": "e_1quarantined", "b": ["straßenbahn"]})],
    filters=[
        Filter('"quarantined"'),
        Filter("quarantined"),
        Filter("unquarantine"),
        Filter('"e_1quarantined x"'),
        Filter("a:quarantined"),
        Filter('a:"e_1quarant"'),
        Filter("b:STRASSENBAHN"),
        Filter('b:"enbahn"'),
    ],
)
# A negated term's lookup is not in the condition, so it must not drive the scan.
@example(lines=[_line("ab ", host="ß", app="ab")], filters=[Filter("(-str app:* host:(-a))")])
@pytest.mark.usefixtures("common_rows")
async def test_sql_selects_what_the_matcher_selects(
    store: Store, lines: list[NewLine], filters: list[Filter], tmp_path: Path
) -> None:
    await check(store, lines, filters, tmp_path / f"segments-{uuid.uuid4().hex[:8]}")


@pytest.mark.parametrize("query", ["-str app:*", "(-str app:* host:(-a))", "-str level:x", "-str"])
def test_only_lookups_in_the_condition_drive(query: str) -> None:
    """A lookup under a NOT is dropped from the condition (a NOT of a superset is no
    subset); it must not come back as a driving lookup (it once did when a later
    condition reused its id())."""
    line_filter = parse_line_filter(hosts=None, apps=None, levels=None, query=query)
    assert translate(line_filter, dialect="sqlite").driving_fts == ()


async def test_account_values_test_the_account_read(store: Store) -> None:
    """``_account:<value>`` tests the id of the account whose lines are read: the
    filters are written with the store's own account id, so they cannot be generated."""
    account = store.account_id
    lines = [_line("one", app="a"), _line("two", app="b")]
    cases = [
        Filter(f"_account:{account[:3]}"),
        Filter(f"_account:=={account}"),
        Filter(f"_account:==={account.upper()}"),
        Filter(f"_account:{account.upper()} app:a"),
        Filter("_account:nope"),
        Filter(f"-_account:{account}"),
        Filter(f"_account:({account[:2]} -{account}) OR app:b"),
    ]
    window = await store.add(lines)
    stored = await store.rows(window, None)
    selected: list[list[str]] = []
    for case in cases:
        parsed = case.parse()
        assert parsed is not None
        line_filter = parsed.bound_to(account)
        expected = {row.id for row in stored if _matches(line_filter, row)}
        sql = translate(line_filter, dialect=store.dialect)
        assert sql.exact, case
        assert {row.id for row in await store.rows(window, sql)} == expected, case
        assert {int(line_id) for line_id in await store.export(window, case)} == expected, case
        selected.append(sorted(row.line for row in stored if row.id in expected))
    assert selected == [
        ["one", "two"], ["one", "two"], [], ["one"], [], [], ["two"],
    ]  # fmt: skip


# -- both tiers ---------------------------------------------------------------------------

DAY_MS = 86_400_000


async def tiered_answers(
    store: Store, account: AccountCtx, window: tuple[int, int], case: Filter
) -> tuple[list[str], int, bool]:
    """The export's ids (all pages) and the aggregation's total and exactness."""
    params = {"hosts": case.hosts, "apps": case.apps, "levels": case.levels}
    lines, _pages = await export_all(
        store.client,
        account.headers,
        query=case.query,
        size=3,
        **{"from": window[0], "to": window[1]},
        **params,
    )
    response = await store.client.get(
        "/v1/aggregate",
        params={
            name: value
            for name, value in {
                "from": window[0],
                "to": window[1],
                "query": case.query,
                **params,
            }.items()
            if value is not None
        },
        headers=account.headers,
    )
    assert response.status_code == 200, response.text
    body = response.json()
    return [line["_id"] for line in lines], int(body["total"]), bool(body["exact"])


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(lines=log_lines(), filters=st.lists(FILTERS, min_size=1, max_size=3))
@example(
    lines=[_line("STRA\u017fSE ab"), _line("straße x", app="İx"), _line("ab", meta={"a": 400})],
    filters=[Filter("strasse"), Filter("app:i"), Filter("a:==400"), Filter("-ab")],
)
async def test_both_tiers_answer_as_the_row_store(
    store: Store, lines: list[NewLine], filters: list[Filter]
) -> None:
    """The same queries give the same answers with the lines in the row store, split
    across the row store and segments, and all in segments (export pages and
    aggregations, docs/log-store.md "Segments")."""
    account = await make_account(store.client, store.account.tenant)
    start = BASE_MS + next(store.windows) * 1_000
    for offset, line in enumerate(lines):
        line.ts = start + offset
    window = (start, start + 999)
    half = (len(lines) + 1) // 2
    now = now_ms()
    async with store.db.write_sessions() as session:
        # The first half received long ago, the rest two hours ago.
        await store_lines(
            session=session,
            account_id=account.account_id,
            lines=lines[:half],
            received_ms=now - 10 * DAY_MS,
        )
        if lines[half:]:
            await store_lines(
                session=session,
                account_id=account.account_id,
                lines=lines[half:],
                received_ms=now - 7_200_000,
            )
        await session.commit()
    statement = read_queries.scan_lines(
        account_id=account.account_id,
        from_ms=window[0],
        to_ms=window[1],
        max_id=2**62,
        after=None,
        newest_first=False,
        limit=1_000,
    )
    async with store.db.read_sessions() as session:
        stored = [LineRow(*row) for row in (await session.execute(statement)).all()]
    cases = [
        (case, parsed.bound_to(account.account_id))
        for case in filters
        if (parsed := case.parse()) is not None
    ]
    wanted = {
        case: {row.id for row in stored if _matches(line_filter, row)}
        for case, line_filter in cases
    }
    root = store.client.settings.segment_directory
    states = [
        None,  # all in the row store
        # Row groups of one line: the segment index rules out some of them.
        CompactorConfig(
            root=root,
            after_ms=DAY_MS,
            window_ms=DAY_MS,
            max_lines=3,
            lease_ms=60_000,
            row_group_lines=1,
        ),
        CompactorConfig(
            root=root,
            after_ms=0,
            window_ms=3_600_000,
            max_lines=3,
            lease_ms=60_000,
            row_group_lines=1,
        ),
    ]
    try:
        for state in states:
            if state is not None:
                moved = await compact_round(
                    store.db, state, owner="property", accounts=[account.account_id]
                )
                assert moved.claimed
            for case, _line_filter in cases:
                exported, total, exact = await tiered_answers(store, account, window, case)
                assert len(exported) == len(set(exported)), (case, state)
                assert {int(line_id) for line_id in exported} == wanted[case], (case, state)
                assert exact, (case, state)
                assert total == len(wanted[case]), (case, state)
    finally:
        # The database is the session's: the other tests' compactors take the lease.
        await release(store.db, owner="property")

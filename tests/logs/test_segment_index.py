"""The segment index (docs/log-store.md, "The segment index"): the trigrams and filters it
is built from, what it reads off a condition, and that DuckDB then reads only the row
groups it keeps; through the app, on both backends, a rare term, a meta value and a
phrase held by one row group make a read search that row group alone (the metrics'
count), and a segment written without an index is still read whole.

Exactness across the tiers with the index in the way is the property tests' part
(``tests/logs/test_sql_filter.py``: row groups of one line, so that it rules some out)."""

from __future__ import annotations

import json
import random
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import func, select, update
from tests.aggregate.helpers import HOUR_MS, HOUR_START
from tests.api.scrape import Series, moved, scrape
from tests.conftest import AppClient
from tests.export.helpers import insert_lines, now_ms
from tests.factories import AccountCtx, make_account, make_tenant
from tests.logs.test_segments import DAY_MS, generated_lines, walk

from tidegate.db.engine import Database
from tidegate.export.service import segment_filter
from tidegate.logs import segment_index, segment_lookup
from tidegate.logs.compactor import CompactorConfig, compact_round, release, write_rows
from tidegate.logs.filtering import parse_line_filter
from tidegate.logs.reading import SegmentStatements
from tidegate.logs.segments import LINE_COLUMNS, SegmentFile, duck_condition, duckdb_connection
from tidegate.logs.store import NewLine
from tidegate.logs.tiers import SegmentWalk, located, segment_query
from tidegate.models import LogLine, LogSegment


def every_trigram(text: str) -> set[str]:
    return {text[index : index + 3] for index in range(len(text) - 2)}


def every_word_prefix(text: str) -> set[str]:
    return {
        word[:length]
        for word in re.findall(r"\w+", text)
        for length in segment_index.WORD_PREFIXES
        if length <= len(word)
    }


TEXTS = st.lists(
    st.one_of(st.none(), st.text(alphabet=" ,aßb_\u212a\u2014\U0001f600", max_size=24))
)


@given(texts=TEXTS, separator=st.sampled_from([" ", ",", ",:", ":, "]))
def test_the_pieces_of_texts_hold_every_trigram_and_word(
    texts: list[str | None], separator: str
) -> None:
    cut = segment_index.pieces(texts, separator)
    assert segment_index.trigrams(cut) == set().union(
        *(every_trigram(text) for text in texts if text)
    )
    assert segment_index.word_prefixes(cut) == set().union(
        *(every_word_prefix(text) for text in texts if text)
    )


def block_of(filters: dict[int, set[str]]) -> segment_index.Block:
    views = tuple(
        memoryview(segment_index.bloom_filter(filters.get(index, set()))) for index in range(4)
    )
    return segment_index.Block(0, 1, 0, 0, views)


def holds(filter_: int, *entries: str) -> segment_lookup.Holds:
    return segment_lookup.Holds(
        filter_, tuple(segment_index.entry_hash(entry) for entry in entries)
    )


@given(
    found=st.sets(st.text(min_size=3, max_size=8), max_size=300),
    others=st.lists(st.text(min_size=3, max_size=8), max_size=20),
)
def test_a_filter_holds_every_entry_it_was_built_from(found: set[str], others: list[str]) -> None:
    """No false negative, whatever the size (the filter is capped, never the set)."""
    block = block_of({segment_index.LINE_TRIGRAMS: found})
    assert len(block.filters[0]) <= segment_index.MAX_FILTER_BYTES
    for entry in found:
        assert segment_lookup.may_hold(holds(segment_index.LINE_TRIGRAMS, entry), block)
    # The other filters are empty: nothing is in them.
    for entry in [*found, *others][:20]:
        assert not segment_lookup.may_hold(holds(segment_index.META_TRIGRAMS, entry), block)


def test_a_large_set_is_held_in_a_capped_filter() -> None:
    found = {chr(0x3000 + index) + "ab" for index in range(60_000)}
    block = block_of({segment_index.LINE_WORDS: found})
    assert len(block.filters[segment_index.LINE_WORDS]) == segment_index.MAX_FILTER_BYTES
    sample = random.Random(3).sample(sorted(found), 500)
    assert all(
        segment_lookup.may_hold(holds(segment_index.LINE_WORDS, entry), block) for entry in sample
    )


def test_the_hash_is_fixed() -> None:
    """Indexes outlive processes and versions: the hash never depends on either."""
    assert segment_index.entry_hash("abc") == 0x5995D533D814BBD8
    assert segment_index.entry_hash("\U0001f600ab") == 0x6C704A0AB7671331


def test_like_runs_are_the_literal_characters_between_wildcards() -> None:
    assert segment_lookup.like_runs("%disk full%") == ["disk full"]
    assert segment_lookup.like_runs(r"%a\%b\_c_d\\e%") == ["a%b_c", "d\\e"]
    assert segment_lookup.like_runs(r"%caf\\u____%") == ["caf\\u"]


def test_an_index_reads_back_and_a_damaged_one_is_none() -> None:
    columns: dict[str, list[Any]] = {
        "ts": [5, 6, 7, 9, 12],
        "line": ["Disk full", "a", "quota exceeded", "x", "y"],
        "meta": [None, '{"a":"zz"}', None, None, None],
        "line_folded": ["disk full", "a", "quota exceeded", "x", "y"],
        "meta_folded": [None, '{"a":"zz"}', None, None, None],
    }
    data = segment_index.build(columns, block_lines=2)
    index = segment_index.parse(data)
    assert index is not None
    assert [(b.first_row, b.rows, b.min_ts, b.max_ts) for b in index.blocks] == [
        (0, 2, 5, 6),
        (2, 2, 7, 9),
        (4, 1, 12, 12),
    ]
    assert index.lines == 5
    # No meta in the last two blocks, no word of six characters in the first and last.
    assert [[len(f) > 0 for f in block.filters] for block in index.blocks] == [
        [True, True, False, False],
        [True, False, True, False],
        [False, False, False, False],
    ]
    for damaged in (
        None,
        b"",
        data[:-1],
        data + b"\0",
        b"XXXX" + data[4:],
        data[:4] + b"\2" + data[5:],
    ):
        assert segment_index.parse(damaged) is None


def test_the_cache_of_indexes_keeps_to_its_bound() -> None:
    columns: dict[str, list[Any]] = {
        "ts": list(range(40)),
        "line": [f"line {index} quarantined" for index in range(40)],
        "meta": [None] * 40,
        "line_folded": [f"line {index} quarantined" for index in range(40)],
        "meta_folded": [None] * 40,
    }
    index = segment_index.parse(segment_index.build(columns, block_lines=8))
    assert index is not None
    cache = segment_index.IndexCache(max_bytes=3 * (index.size + 2_000))
    for name in "abcd":
        cache.add(("root", name), index)
    cache.add(("root", "e"), None)  # a segment without an index is known too
    cache.add(("root", "e"), index)  # and never replaced: segments do not change
    assert cache.known([("root", "b")]) == {("root", "b"): index}  # used: kept longest
    cache.add(("root", "f"), index)
    # Room for three indexes (and the entry without one): the least recently used went.
    known = cache.known(("root", name) for name in "abcdef")
    assert known[("root", "e")] is None
    assert set(known) == {("root", "b"), ("root", "d"), ("root", "e"), ("root", "f")}
    cache.clear()
    assert cache.known([("root", "b")]) == {}


def test_row_ranges_merge_adjacent_blocks() -> None:
    blocks = [
        segment_index.Block(first, 4, 0, 0, (memoryview(b""),) * 4) for first in (0, 4, 12, 20, 24)
    ]
    assert segment_lookup.row_ranges(blocks) == ((0, 7), (12, 15), (20, 27))


def looked_up(query: str) -> segment_lookup.Lookup | None:
    line_filter = parse_line_filter(hosts=None, apps=None, levels=None, query=query)
    return segment_lookup.lookup(segment_filter(line_filter).where)


def test_a_term_and_a_meta_value_are_looked_up_by_their_first_word() -> None:
    """A term sits at a word start, so its first word's prefixes are held; a phrase may
    start inside a word, so only the words that start inside it are."""
    word = segment_index.LINE_WORDS
    assert looked_up("5f3a9c2b1e0d") == segment_lookup.AllOf(
        (
            holds(segment_index.LINE_TRIGRAMS, *every_trigram_in_order("5f3a9c2b1e0d")),
            holds(word, "5f3a9c", "5f3a9c2b", "5f3a9c2b1e0d"),
        )
    )
    phrase = looked_up('"5f3a9c2b1e0d.pdf quarantined"')
    assert isinstance(phrase, segment_lookup.AllOf)
    assert phrase.parts[1] == holds(word, "quaran", "quaranti")
    meta = looked_up("request_id:req_000012345")
    assert isinstance(meta, segment_lookup.AllOf)
    assert holds(segment_index.META_WORDS, "req_00", "req_0000", "req_00001234") in meta.parts


def every_trigram_in_order(text: str) -> list[str]:
    return list(dict.fromkeys(text[index : index + 3] for index in range(len(text) - 2)))


@pytest.mark.parametrize(
    ("query", "looks_up"),
    [
        ("quarantined", True),
        ("-quarantined", False),  # never under a NOT
        ("quarantined OR level:error", False),  # the other side is no literal
        ("quarantined level:error", True),
        ("ab OR quarantined", False),  # two characters: no trigram
        ("meta.error.code:ECONNRESET", True),
        ('"connection reset by peer"', True),
        ("_line:disk", True),
        ("café", True),
        ("level:error app:web", False),
        ("status:>=500", True),  # the key "status" is in the meta text
    ],
)
def test_what_a_condition_looks_up(query: str, looks_up: bool) -> None:
    assert (looked_up(query) is not None) == looks_up


# -- DuckDB reads only the row groups the index keeps -----------------------------------


def _row(line_id: int, ts: int, line: str, meta: dict[str, Any] | None) -> tuple[Any, ...]:
    """A row as the compactor reads one from SQLite (``compactor_columns``)."""
    meta_json = None if meta is None else json.dumps(meta, separators=(",", ":"))
    return (
        line_id, ts, ts, "h", "a", "info", None, None, None, None, None, meta_json, line,
        None, "h", "a", "info", len(line),
    )  # fmt: skip


def _profiled(tmp_path: Path, read: Callable[[], list[int]]) -> tuple[list[int], dict[str, Any]]:
    """What ``read`` returns, and DuckDB's JSON profile of its (last) statement."""
    profile = tmp_path / f"profile-{uuid.uuid4().hex}.json"
    connection = duckdb_connection()
    connection.execute("PRAGMA enable_profiling = 'json'")
    connection.execute(f"PRAGMA profiling_output = '{profile}'")
    try:
        found = read()
    finally:
        connection.execute("PRAGMA disable_profiling")
    return found, json.loads(profile.read_text())


def _ids(paths: list[str], where: Any, rows: Any) -> list[int]:
    """The ids of the lines ``segment_query`` reads from the files (``rows``: those
    narrowed by the index)."""
    return [
        int(row[0])
        for row in segment_query(
            SegmentStatements(budget_s=0),
            paths,
            columns=", ".join(LINE_COLUMNS),
            where=where,
            from_ms=0,
            to_ms=10**6,
            max_id=10**6,
            rows=rows,
        )
    ]


def _row_groups_scanned(profile: dict[str, Any]) -> tuple[int, int]:
    """(row groups scanned, row groups there were) of every Parquet scan profiled."""
    scanned = total = 0
    pending = [profile]
    while pending:
        node = pending.pop()
        if "row_groups_scanned" in node:
            scanned += int(node["row_groups_scanned"])
            total += int(node["total_row_groups_to_scan"])
        pending.extend(node.get("children", []))
        pending.extend(node.get("operator", []))
    return scanned, total


@pytest.mark.parametrize(
    ("query", "holding"),
    [
        ("zyxwvut", {37}),
        ("trace:t-98765432", {41}),
        ('"disk quota exceeded"', {70}),
        ("zyxwvut OR trace:t-98765432", {37, 41}),
    ],
)
def test_duckdb_reads_only_the_row_groups_the_index_keeps(
    tmp_path: Path, query: str, holding: set[int]
) -> None:
    rng = random.Random(5)
    # Near misses of the needles: their words apart, and parts of them.
    words = ["disk", "quota", "exceeded", "full", "error", "ok", "zyxw", "t-9876"]
    rows = []
    for line_id in range(80):
        text = ", ".join(rng.sample(words, 3))
        meta: dict[str, Any] | None = {"trace": "t-9876" + "".join(rng.choices("abcdef", k=4))}
        if line_id == 37:
            text += " zyxwvut"
        if line_id == 41:
            meta = {"trace": "t-98765432"}
        if line_id == 70:
            text = "disk quota exceeded"
        rows.append(_row(line_id, 1_000 + line_id, text, meta))
    name = "acct/0-0.parquet"
    _size, _bounds, filters = write_rows(tmp_path, name, rows, "sqlite", row_group_lines=8)
    index = segment_index.parse(filters)
    assert index is not None
    path = str(tmp_path / name)
    where = segment_filter(parse_line_filter(hosts=None, apps=None, levels=None, query=query)).where
    found = segment_lookup.lookup(where)
    assert found is not None
    file = SegmentFile(name, 1_000, 1_079, 80, locate=lambda: path)
    narrowed, candidates = segment_lookup.narrow(file, index, found)
    assert narrowed is not None
    # Exactly the row groups of the lines holding it (rows sorted by ts, as ids here).
    assert candidates == len({line_id // 8 for line_id in holding})
    assert narrowed.lines == 8 * candidates

    def read(rows: Any) -> tuple[set[int], tuple[int, int]]:
        ids, profile = _profiled(tmp_path, lambda: _ids([path], where, rows))
        return set(ids), _row_groups_scanned(profile)

    whole, (scanned, total) = read(None)
    assert whole == holding
    assert (scanned, total) == (10, 10)
    paths, ranges = located([narrowed])
    assert paths == [path]
    narrow, (scanned, total) = read(ranges)
    assert narrow == holding
    assert (scanned, total) == (candidates, 10)


def _rows_out_of_scans(profile: dict[str, Any]) -> list[int]:
    """The rows each Parquet scan of a profiled statement passed on (after the filters
    it applies itself)."""
    counts = []
    pending = [profile]
    while pending:
        node = pending.pop()
        if node.get("name") == "READ_PARQUET":
            counts.append(int(node["intermediate_rows"]))
        pending.extend(node.get("children", []))
        pending.extend(node.get("operator", []))
    return counts


def test_each_narrowed_scan_filters_itself(tmp_path: Path) -> None:
    """Two segments, each narrowed to the row group holding a rare word (with near
    misses of it in every row group): each file's scan of its kept row group applies
    the read's condition itself, passing on only the matching line, not the row group's
    eight (which a condition applied to the union of the scans, outside them, made
    every such read decode whole: slower than no index once many row groups are kept).
    For an aggregation's rows and for an export walk's chunk (ordered and limited)."""
    rng = random.Random(9)
    words = ["disk", "quota", "exceeded", "zyxw", "ok", "zyxwv"]
    where = segment_filter(
        parse_line_filter(hosts=None, apps=None, levels=None, query="zyxwvut")
    ).where
    found = segment_lookup.lookup(where)
    assert found is not None
    holding = {10, 52}
    files = []
    for part in range(2):
        rows = []
        for line_id in range(part * 40, part * 40 + 40):
            text = ", ".join(rng.sample(words, 3))
            if line_id in holding:
                text += " zyxwvut"
            rows.append(_row(line_id, 1_000 + line_id, text, None))
        name = f"acct/{part}-0.parquet"
        _size, _bounds, filters = write_rows(tmp_path, name, rows, "sqlite", row_group_lines=8)
        index = segment_index.parse(filters)
        assert index is not None
        path = str(tmp_path / name)
        file = SegmentFile(
            name, 1_000 + part * 40, 1_039 + part * 40, 40, locate=lambda path=path: path
        )
        narrowed, candidates = segment_lookup.narrow(file, index, found)
        assert narrowed is not None
        assert candidates == 1
        files.append(narrowed)
    paths, ranges = located(files)

    ids, profile = _profiled(tmp_path, lambda: _ids(paths, where, ranges))
    assert sorted(ids) == sorted(holding)
    assert _rows_out_of_scans(profile) == [1, 1]

    for newest_first in (False, True):
        # One statement: a slice spanning both segments, as many lines wanted as there.
        walk = SegmentWalk(
            reader=cast(Any, SegmentStatements(budget_s=0)),
            files=files,
            condition=duck_condition(where),
            from_ms=1_000,
            to_ms=1_079,
            max_id=10**6,
            newest_first=newest_first,
            budget=80,
            wanted=lambda: 80,
        )
        ids, profile = _profiled(tmp_path, lambda walk=walk: [row.id for row in walk.rows(None)])
        assert ids == sorted(holding, reverse=newest_first)
        assert walk.exhausted
        # Each scan (DuckDB scans a file twice for a top-N: the keys of the lines kept,
        # then their columns) passes on its one line.
        assert set(_rows_out_of_scans(profile)) == {1}


# -- through the app --------------------------------------------------------------------

ROW_GROUP_LINES = 8
SEGMENT_LINES = 40
NEEDLES = {
    # query: the line holding it (by its place in the account's lines)
    "zyxwvut": 17,
    "trace:t-98765432": 63,
    '"disk quota exceeded"': 101,
}


def needle_lines() -> list[NewLine]:
    """120 lines over an hour in time order, with near misses of the needles (``quota``,
    ``exceeded`` and ``disk`` apart, the start of the word, traces that start alike) and
    each needle once."""
    lines = generated_lines(120, seed=31)
    lines.sort(key=lambda line: line.ts)
    rng = random.Random(31)
    for index, line in enumerate(lines):
        line.meta = {**(line.meta or {}), "trace": "t-9876" + "".join(rng.choices("abcdef", k=4))}
        if index % 7 == 0:
            line.line += " exceeded quota zyxw"
    lines[NEEDLES["zyxwvut"]].line += " zyxwvut"
    lines[NEEDLES["trace:t-98765432"]].meta = {"trace": "t-98765432"}
    lines[NEEDLES['"disk quota exceeded"']].line = "disk quota exceeded on /var"
    return lines


async def compacted(
    client: AppClient, lines: list[NewLine], *, index_block_lines: int | None = None
) -> tuple[AccountCtx, list[int]]:
    """A new account's lines, all moved into segments of ``SEGMENT_LINES`` lines in row
    groups of ``ROW_GROUP_LINES`` (their index in blocks of ``index_block_lines``, by
    default a row group); with the ids of the lines, in their order."""
    url = client.database_url
    account = await make_account(client, await make_tenant(url))
    await insert_lines(url, account.account_id, lines, received_ms=now_ms() - 10 * DAY_MS)
    config = CompactorConfig(
        root=client.settings.segment_directory,
        after_ms=DAY_MS,
        window_ms=DAY_MS,
        max_lines=SEGMENT_LINES,
        lease_ms=60_000,
        row_group_lines=ROW_GROUP_LINES,
        index_block_lines=index_block_lines,
    )
    db = Database.connect(url)
    owner = uuid.uuid4().hex
    try:
        while True:
            result = await compact_round(db, config, owner=owner, accounts=[account.account_id])
            assert result.claimed  # the database is shared: no other owner's lease left
            if not result.segments:
                break
        await release(db, owner=owner)
        async with db.read_sessions() as session:
            hot = await session.scalar(
                select(func.count()).where(LogLine.account_id == account.account_id)
            )
            segments = await session.scalar(
                select(func.count()).where(LogSegment.account_id == account.account_id)
            )
    finally:
        await db.dispose()
    assert (hot, segments) == (0, len(lines) // SEGMENT_LINES)
    ids = sorted(int(line["_id"]) for line in await walk(client, account, size=500))
    return account, ids


async def aggregate_total(client: AppClient, account: AccountCtx, query: str) -> int:
    response = await client.get(
        "/v1/aggregate",
        params={"from": HOUR_START, "to": HOUR_START + HOUR_MS - 1, "query": query},
        headers=account.headers,
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["exact"] is True
    return int(body["total"])


def index_moves(before: Series, after: Series) -> dict[str, float]:
    return {
        **{
            f"files {outcome}": moved(
                before, after, "tidegate_segment_files_total", outcome=outcome
            )
            for outcome in ("searched", "skipped", "unindexed")
        },
        **{
            f"row groups {outcome}": moved(
                before, after, "tidegate_segment_row_groups_total", outcome=outcome
            )
            for outcome in ("searched", "skipped")
        },
    }


@pytest.mark.parametrize("index_block_lines", [None, 2])
async def test_a_literal_held_by_one_row_group_reads_only_that_row_group(
    client: AppClient, index_block_lines: int | None
) -> None:
    lines = needle_lines()
    account, ids = await compacted(client, lines, index_block_lines=index_block_lines)
    segments = len(lines) // SEGMENT_LINES
    # Blocks of the index: a row group each, or the compactor's finer blocks.
    row_groups = len(lines) // (index_block_lines or ROW_GROUP_LINES)
    for query, place in NEEDLES.items():
        before = await scrape(client)
        found = await walk(client, account, query=query)
        assert [int(line["_id"]) for line in found] == [ids[place]], query
        assert await aggregate_total(client, account, query) == 1, query
        # Two reads (the page and the aggregation), each searching one row group.
        assert index_moves(before, await scrape(client)) == {
            "files searched": 2,
            "files skipped": 2 * (segments - 1),
            "files unindexed": 0,
            "row groups searched": 2,
            "row groups skipped": 2 * (row_groups - 1),
        }, query
    # A query without a literal looks nothing up.
    before = await scrape(client)
    assert len(await walk(client, account, query="level:error")) > 0
    assert set(index_moves(before, await scrape(client)).values()) == {0}


async def test_a_segment_written_without_an_index_is_read_whole(client: AppClient) -> None:
    lines = needle_lines()
    account, ids = await compacted(client, lines)
    db = Database.connect(client.database_url)
    try:
        async with db.write_sessions() as session:
            # The needles' segments as written before migration 0022.
            paths = [
                str(path)
                for path in (
                    await session.execute(
                        select(LogSegment.path)
                        .where(LogSegment.account_id == account.account_id)
                        .order_by(LogSegment.min_id)
                    )
                ).scalars()
            ]
            await session.execute(
                update(LogSegment)
                .where(LogSegment.path.in_([paths[0], paths[2]]))
                .values(trigram_filters=None)
            )
            await session.commit()
    finally:
        await db.dispose()
    segment_index.INDEXES.clear()
    for query, place in NEEDLES.items():
        before = await scrape(client)
        found = await walk(client, account, query=query)
        assert [int(line["_id"]) for line in found] == [ids[place]], query
        assert await aggregate_total(client, account, query) == 1, query
        moves = index_moves(before, await scrape(client))
        assert (moves["files unindexed"], moves["files searched"] + moves["files skipped"]) == (
            4,
            2,
        ), query


async def test_a_term_at_a_word_start_of_a_parsed_message_is_found(client: AppClient) -> None:
    """A term matches at a word start of the searched text, a parsed line's message,
    which the line may hold escaped: ``\\u2014zyxwvutsr`` has no word starting with
    ``zyxwvutsr``, its message (``—zyxwvutsr``) has. The index holds the message's words
    too, or the term's row group would be skipped."""
    lines = [
        NewLine(line=f"line {index} of the hour", ts=HOUR_START + index, host="h")
        for index in range(40)
    ]
    lines[29] = NewLine(
        line='{"message":"\\u2014zyxwvutsr end"}',
        ts=HOUR_START + 29,
        host="h",
        meta={"message": "\u2014zyxwvutsr end"},
    )
    account, ids = await compacted(client, lines)
    for query in ("zyxwvutsr", "zyxwvuts", "zyxwvutsr end"):
        before = await scrape(client)
        assert [int(line["_id"]) for line in await walk(client, account, query=query)] == [
            ids[29]
        ], query
        assert index_moves(before, await scrape(client))["row groups searched"] == 1, query

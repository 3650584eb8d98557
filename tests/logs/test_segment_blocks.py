"""An index of blocks finer than the file's row groups (``index_block_lines``), and the
bound on the row ranges a scan tests (``segments.bounded_ranges``): no line the matcher
selects is ever left out (docs/log-store.md, "A finer index: measured")."""

from __future__ import annotations

import itertools
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.logs.test_segment_index import _ids, _row
from tests.property_sizes import examples

from tidegate.export.service import segment_filter
from tidegate.logs import segment_index, segment_lookup, segments
from tidegate.logs.compactor import write_rows
from tidegate.logs.filtering import parse_line_filter
from tidegate.logs.segments import SegmentFile, bounded_ranges
from tidegate.logs.tiers import located

# Words and near misses of each other (prefixes, a shared stem), so that a query's
# literal is in some lines, a part of it in others.
WORDS = ["quarantined", "quarant", "quota", "disk", "exceeded", "zyxwvut", "zyx", "t-98765432"]
QUERIES = [
    "quarantined",
    "quarant",
    "zyxwvut",
    '"disk quota"',
    '"quota exceeded"',
    "trace:t-98765432",
    "trace:t-9876",
    "zyxwvut OR quota",
    "disk -quota",
    "exceeded AND trace:t-98765432",
]


@st.composite
def ranges_apart(draw: st.DrawFn) -> list[tuple[int, int]]:
    """Sorted ranges (first, last) with at least one row between them."""
    ranges = []
    first = draw(st.integers(0, 5))
    for _ in range(draw(st.integers(0, 40))):
        last = first + draw(st.integers(0, 6))
        ranges.append((first, last))
        first = last + 2 + draw(st.integers(0, 9))
    return ranges


@given(ranges=ranges_apart(), most=st.integers(1, 12))
def test_bounded_ranges_cover_every_row_in_at_most_so_many(
    ranges: list[tuple[int, int]], most: int
) -> None:
    bounded = bounded_ranges(ranges, most)
    assert len(bounded) <= max(most, 0) or not ranges
    assert len(bounded) == min(len(ranges), most)
    # In order, apart, each from a range's first row to a range's last row.
    firsts = {first for first, _ in ranges}
    lasts = {last for _, last in ranges}
    for (_, last), (first, _) in itertools.pairwise(bounded):
        assert last + 1 < first
    assert all(first in firsts and last in lasts for first, last in bounded)
    for first, last in ranges:
        assert any(a <= first and last <= b for a, b in bounded)
    if len(ranges) <= most:
        assert bounded == ranges


def test_bounded_ranges_fill_the_narrowest_gaps() -> None:
    ranges = [(0, 0), (2, 2), (100, 100), (103, 103), (500, 500)]
    assert bounded_ranges(ranges, 3) == [(0, 2), (100, 103), (500, 500)]
    assert bounded_ranges(ranges, 1) == [(0, 500)]


LINES = st.lists(
    st.tuples(
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
        st.sampled_from([None, "t-98765432", "t-9876abcd", "t-1"]),
    ),
    min_size=1,
    max_size=60,
)


@settings(max_examples=examples(60), deadline=None)
@given(
    lines=LINES,
    query=st.sampled_from(QUERIES),
    row_group_lines=st.sampled_from([3, 8, 16]),
    index_block_lines=st.sampled_from([None, 1, 2, 5]),
    most=st.sampled_from([1, 2, 64]),
)
def test_a_finer_index_never_drops_a_matching_line(
    lines: list[tuple[list[str], str | None]],
    query: str,
    row_group_lines: int,
    index_block_lines: int | None,
    most: int,
) -> None:
    rows = []
    for line_id, (words, trace) in enumerate(lines):
        meta: dict[str, Any] | None = None if trace is None else {"trace": trace}
        rows.append(_row(line_id, 1_000 + line_id, " ".join(words), meta))
    line_filter = parse_line_filter(hosts=None, apps=None, levels=None, query=query)
    expected = {
        line_id
        for line_id, (words, trace) in enumerate(lines)
        if line_filter.matches(
            line=" ".join(words),
            host="h",
            app="a",
            level="info",
            file=None,
            meta=None if trace is None else {"trace": trace},
        )
    }
    where = segment_filter(line_filter).where
    with TemporaryDirectory() as scratch, pytest.MonkeyPatch.context() as patch:
        patch.setattr(segments, "MAX_SCAN_RANGES", most)
        directory = Path(scratch)
        name = "acct/0-0.parquet"
        _size, _bounds, filters = write_rows(
            directory,
            name,
            rows,
            "sqlite",
            row_group_lines=row_group_lines,
            index_block_lines=index_block_lines,
        )
        index = segment_index.parse(filters)
        assert index is not None
        block = index_block_lines or row_group_lines
        assert len(index.blocks) == -(-len(rows) // block)
        path = str(directory / name)
        whole = set(_ids([path], where, None))
        assert expected <= whole
        found = segment_lookup.lookup(where)
        if found is None:
            return
        file = SegmentFile(name, 1_000, 1_000 + len(rows), len(rows), locate=lambda: path)
        narrowed, _candidates = segment_lookup.narrow(file, index, found)
        if narrowed is None:
            assert not expected
            return
        paths, ranges = located([narrowed])
        read = set(_ids(paths, where, ranges))
        # What the narrowed read selects: every line the matcher does, and nothing the
        # whole read would not have.
        assert expected <= read <= whole


def test_an_index_finer_than_the_row_groups_keeps_only_the_blocks_holding_a_word(
    tmp_path: Path,
) -> None:
    rows = [
        _row(line_id, 1_000 + line_id, "zyxwvut" if line_id in (5, 40) else "disk full", None)
        for line_id in range(64)
    ]
    name = "acct/0-0.parquet"
    _size, _bounds, filters = write_rows(
        tmp_path, name, rows, "sqlite", row_group_lines=32, index_block_lines=4
    )
    index = segment_index.parse(filters)
    assert index is not None
    assert [block.rows for block in index.blocks] == [4] * 16
    where = segment_filter(
        parse_line_filter(hosts=None, apps=None, levels=None, query="zyxwvut")
    ).where
    found = segment_lookup.lookup(where)
    assert found is not None
    path = str(tmp_path / name)
    file = SegmentFile(name, 1_000, 1_063, 64, locate=lambda: path)
    narrowed, candidates = segment_lookup.narrow(file, index, found)
    assert narrowed is not None
    assert candidates == 2
    assert narrowed.rows == ((4, 7), (40, 43))
    paths, ranges = located([narrowed])
    assert set(_ids(paths, where, ranges)) == {5, 40}

"""The scaling bench's copies of segments (``bench/bench_scaling.py``): an older week is
a template week's files moved by whole weeks, with the template's index, its row
groups' ts spans moved the same. A span left unmoved would make reads skip row groups
that hold their lines (the index rules a row group out by its span), and the bench
would time answers that are wrong without noticing for the cases it does not count."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from bench_scaling import WEEK_MS, chosen, shift_index
from tidegate.logs import segment_index


def _columns(lines: int) -> dict[str, list[object]]:
    return {
        "ts": [1_000_000 + 7 * index for index in range(lines)],
        "line": [f"line {index} quarantined" for index in range(lines)],
        "meta": [None if index % 3 else '{"a":"b"}' for index in range(lines)],
        "line_folded": [f"line {index} quarantined" for index in range(lines)],
        "meta_folded": [None if index % 3 else '{"a":"b"}' for index in range(lines)],
    }


def test_shift_index_moves_every_block_span_and_keeps_the_filters() -> None:
    built = segment_index.build(_columns(50), block_lines=16)
    original = segment_index.parse(built)
    moved = segment_index.parse(shift_index(built, -3 * WEEK_MS))
    assert original is not None
    assert moved is not None
    assert len(moved.blocks) == len(original.blocks) == 4
    for before, after in zip(original.blocks, moved.blocks, strict=True):
        assert (after.first_row, after.rows) == (before.first_row, before.rows)
        assert (after.min_ts, after.max_ts) == (
            before.min_ts - 3 * WEEK_MS,
            before.max_ts - 3 * WEEK_MS,
        )
        assert [bytes(f) for f in after.filters] == [bytes(f) for f in before.filters]


def test_shift_index_refuses_what_is_not_an_index() -> None:
    built = segment_index.build(_columns(20), block_lines=16)
    with pytest.raises(ValueError, match="not a segment index"):
        shift_index(built + b"x", 1)


@pytest.mark.parametrize(("count", "wanted"), [(207, 100), (10, 10), (1_000, 7), (5, 0)])
def test_chosen_picks_exactly_the_wanted_spread_evenly(count: int, wanted: int) -> None:
    picks = [index for index, pick in enumerate(chosen(count, wanted)) if pick]
    assert len(picks) == wanted
    if wanted > 1:
        gaps = [b - a for a, b in itertools.pairwise(picks)]
        assert max(gaps) - min(gaps) <= 1


def test_chosen_refuses_more_needles_than_lines() -> None:
    with pytest.raises(ValueError, match="4 needles among 3 lines"):
        list(chosen(3, 4))

"""What a read looks up in the segment index (``tidegate.logs.segment_index``): which
row groups of a segment may hold a line its condition selects (docs/log-store.md, "The
segment index").

A read's DuckDB condition (``sql_filter.translate(..., dialect="duckdb")``) tests terms,
phrases, ``_line:``, meta keys and meta values as ``LIKE`` patterns on ``line_folded``
and ``meta_folded``. ``lookup(where)`` reads these tests off the condition: an AND/OR
tree of "the block's filters hold these entries"; any other test is "maybe", and nothing
under a NOT is looked into. What a row selected by ``column LIKE pattern`` surely holds:
every trigram of each run of the pattern's literal characters, and, for a word that
starts inside a run after a non-word character (so at a word start of the text too), its
prefixes. A term's condition and a meta value's carry a mark from the translation
(``STARTS_WORD``): the matcher finds a term at a word start of the searched text, and a
meta value starts its JSON value (after ``"``, ``:``, ``,`` or ``[``), so the prefixes
of their first word are held too; a row the matcher selects holds them, and a condition
with a term or a meta value is never exact, so the rows it selects are confirmed. A
block whose filters rule the tree out holds no row the matcher selects, and no row an
exact condition selects: skipping it changes no answer.

Linear in the query: at most ``MAX_LOOKUP_TRIGRAMS`` trigrams and a word's few prefixes
per ``LIKE``, each probed with ``HASHES`` bits per row group.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from sqlalchemy.sql import operators
from sqlalchemy.sql.elements import (
    BinaryExpression,
    BindParameter,
    BooleanClauseList,
    ColumnClause,
    Grouping,
)

from tidegate.logs.segment_index import (
    COLUMNS,
    HASHES,
    LINE_TRIGRAMS,
    LINE_WORDS,
    META_TRIGRAMS,
    META_WORDS,
    Block,
    SegmentIndex,
    entry_hash,
    positions,
    prefixes,
)
from tidegate.logs.segments import SegmentFile
from tidegate.logs.sql_filter import STARTS_WORD

# A literal run is looked up by at most this many of its trigrams (spread over it): any
# of them is a test that holds for every row holding the literal, and a lookup's cost
# stays linear in the query's size, not in a 4,000-character phrase's.
MAX_LOOKUP_TRIGRAMS: Final = 32
_TRIGRAMS = {"line_folded": LINE_TRIGRAMS, "meta_folded": META_TRIGRAMS}
_WORDS = {"line_folded": LINE_WORDS, "meta_folded": META_WORDS}
_WORD = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class Holds:
    """The filter (``LINE_TRIGRAMS`` ...) holds every one of these entries (hashed)."""

    filter: int
    hashed: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class AllOf:
    parts: tuple[Lookup, ...]


@dataclass(frozen=True, slots=True)
class AnyOf:
    parts: tuple[Lookup, ...]


Lookup = Holds | AllOf | AnyOf


def lookup(where: object) -> Lookup | None:
    """What a row selected by ``where`` (a condition over a segment) and by the matcher
    surely holds, as entries of the filters; None: nothing (every block may hold a
    match)."""
    if where is None:
        return None
    found = _lookup(where)
    marked = getattr(where, "_annotations", {}).get(STARTS_WORD)
    if marked is not None:
        column, literal = marked
        starts = _holds(_WORDS[column], _first_word_prefixes(literal))
        return _all([found, starts])
    return found


def _lookup(condition: object) -> Lookup | None:
    if isinstance(condition, Grouping):
        return lookup(condition.element)
    if isinstance(condition, BooleanClauseList):
        parts = [lookup(clause) for clause in condition.clauses]
        if condition.operator is operators.and_:
            return _all(parts)
        if condition.operator is operators.or_ and parts and None not in parts:
            return AnyOf(tuple(part for part in parts if part is not None))
        return None
    if isinstance(condition, BinaryExpression) and condition.operator is operators.like_op:
        return _like(condition)
    return None  # anything else (NOT, comparisons, functions): maybe


def _all(parts: Sequence[Lookup | None]) -> Lookup | None:
    """AND, without the parts that hold anyway (None), nested ANDs flattened."""
    kept: list[Lookup] = []
    for part in parts:
        if isinstance(part, AllOf):
            kept.extend(part.parts)
        elif part is not None:
            kept.append(part)
    if not kept:
        return None
    return kept[0] if len(kept) == 1 else AllOf(tuple(kept))


def _holds(filter_: int, entries: Iterable[str]) -> Holds | None:
    hashed = tuple(entry_hash(entry) for entry in dict.fromkeys(entries))
    return Holds(filter_, hashed) if hashed else None


def _like(condition: BinaryExpression[Any]) -> Lookup | None:
    column, pattern = condition.left, condition.right
    if not (
        isinstance(column, ColumnClause)
        and column.name in COLUMNS
        and isinstance(pattern, BindParameter)
        and isinstance(pattern.value, str)
        and condition.modifiers.get("escape") == "\\"
    ):
        return None
    runs = like_runs(pattern.value)
    found = list(
        dict.fromkeys(run[index : index + 3] for run in runs for index in range(len(run) - 2))
    )
    if len(found) > MAX_LOOKUP_TRIGRAMS:
        step = (len(found) - 1) / (MAX_LOOKUP_TRIGRAMS - 1)
        found = [found[round(index * step)] for index in range(MAX_LOOKUP_TRIGRAMS)]
    words = [prefix for run in runs for prefix in _inner_word_prefixes(run)]
    return _all([_holds(_TRIGRAMS[column.name], found), _holds(_WORDS[column.name], words)])


def like_runs(pattern: str) -> list[str]:
    """The runs of literal characters of a LIKE pattern escaped with ``\\`` (``%`` and
    ``_`` are wildcards), each a substring of every value the pattern matches."""
    runs: list[str] = []
    current: list[str] = []
    escaped = False
    for char in pattern:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in "%_":
            runs.append("".join(current))
            current = []
        else:
            current.append(char)
    runs.append("".join(current))
    return [run for run in runs if run]


def _inner_word_prefixes(run: str) -> list[str]:
    """The prefixes of the words of ``run`` that start inside it after a non-word
    character: a text holding the run has a word starting there, which begins with it
    (or is it, when the run goes on after it)."""
    found = []
    for match in _WORD.finditer(run):
        if match.start() > 0:
            found.extend(prefixes(match.group()))
    return found


def _first_word_prefixes(literal: str) -> list[str]:
    """The prefixes of the literal's first word, when the literal starts with it (a text
    holding the literal at a word start has a word that begins with it)."""
    match = _WORD.match(literal)
    return [] if match is None else prefixes(match.group())


def may_hold(found: Lookup, block: Block, hashes: int = HASHES) -> bool:
    """Whether the block may hold a row with what ``found`` looks for."""
    if isinstance(found, Holds):
        bloom = block.filters[found.filter]
        bits = len(bloom) * 8
        if not bits:
            return False  # nothing of that kind in this block
        for hashed in found.hashed:
            for position in positions(hashed, bits, hashes):
                if not bloom[position >> 3] >> (position & 7) & 1:
                    return False
        return True
    if isinstance(found, AllOf):
        return all(may_hold(part, block, hashes) for part in found.parts)
    return any(may_hold(part, block, hashes) for part in found.parts)


def narrow(file: SegmentFile, index: SegmentIndex, found: Lookup) -> tuple[SegmentFile | None, int]:
    """The file narrowed to the row groups that may hold what ``found`` looks for (None:
    none may), and how many those are."""
    candidates = [block for block in index.blocks if may_hold(found, block, index.hashes)]
    if not candidates:
        return None, 0
    if len(candidates) == len(index.blocks):
        return file, len(candidates)
    narrowed = replace(
        file,
        min_ts=min(block.min_ts for block in candidates),
        max_ts=max(block.max_ts for block in candidates),
        lines=sum(block.rows for block in candidates),
        rows=row_ranges(candidates),
    )
    return narrowed, len(candidates)


def row_ranges(blocks: Sequence[Block]) -> tuple[tuple[int, int], ...]:
    """The file row numbers of the blocks (in file order), adjacent ones merged: each
    range is (first, last)."""
    ranges: list[tuple[int, int]] = []
    for block in blocks:
        last = block.first_row + block.rows - 1
        if ranges and ranges[-1][1] + 1 == block.first_row:
            ranges[-1] = (ranges[-1][0], last)
        else:
            ranges.append((block.first_row, last))
    return tuple(ranges)

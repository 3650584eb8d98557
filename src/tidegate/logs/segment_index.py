"""The segment index: what each row group of a segment holds, for skipping those that
cannot hold a search literal (docs/log-store.md, "The segment index"; what a read looks
up in it: ``tidegate.logs.segment_lookup``).

The compactor builds, with every segment, an index of its rows in blocks of
``row_group_lines`` (the file's row groups: the rows in the order written, sorted by
(ts, id)): for each block its number of rows, its ts span and four Bloom filters:

- the **trigrams** of ``line_folded`` and of ``meta_folded`` (every run of three
  characters);
- the **words** of each: for every word (a maximal run of letters, digits and ``_``,
  as the matcher reads words) its prefixes of ``WORD_PREFIXES`` characters. The line's
  words include those of its searched text (``tidegate.logs.searched``: a parsed
  line's message, which the line may hold escaped), case-folded, whose word starts are
  where a term matches.

The registry keeps it (``log_segments.trigram_filters``), so a read learns which
segments and blocks may hold a literal without opening, or downloading, any file; each
process keeps the indexes it parsed (``INDEXES``). A segment written without an index
(before migration 0022) is read whole.

Everything here is plain CPU on bytes: the compactor builds in its worker thread, reads
parse in the export threads.
"""

from __future__ import annotations

import hashlib
import re
import struct
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

import orjson

from tidegate.logs.searched import searched_text

# The columns indexed, each with the characters its texts are cut at into pieces (see
# ``pieces``): the line's words, the keys and values of the meta's compact JSON text.
COLUMNS: Final = {"line_folded": " ", "meta_folded": ",:"}
# A block's filters, in this order: the trigrams of the line, of the meta; the word
# prefixes of the line (and its searched text), of the meta.
LINE_TRIGRAMS, META_TRIGRAMS, LINE_WORDS, META_WORDS = range(4)
# The prefixes of a word held (those no longer than it): a literal word of n characters
# is looked up by its prefixes up to n. Shorter words are left to the trigrams.
WORD_PREFIXES: Final = (6, 8, 12, 16, 24, 32)
MAGIC: Final = b"TGSI"
VERSION: Final = 1
# Bits a filter gets per distinct entry, and bits set per entry: an entry absent from a
# block passes its filter about 0.9% of the time.
BITS_PER_ENTRY: Final = 10
HASHES: Final = 5
# A filter is never larger than this (a block of 16,384 lines with over 52,000 distinct
# entries in it): it then passes more absent entries, never fewer present ones.
MAX_FILTER_BYTES: Final = 65_536
# Parsed indexes this process keeps, by segment (segments never change).
CACHE_BYTES: Final = 64 * 1024 * 1024

_HEADER = struct.Struct("<4sBBHI")  # magic, version, hashes, filters per block, blocks
_BLOCK = struct.Struct("<Iqq")  # rows, min ts, max ts; then each filter's size (u32)
_SIZE = struct.Struct("<I")
_FILTERS = 4
_LONG_WORD = re.compile(rf"\w{{{WORD_PREFIXES[0]},}}")


# -- what a block holds ---------------------------------------------------------------


def pieces(texts: Iterable[str | None], separators: str) -> set[str]:
    """The texts cut after each of the ``separators`` into distinct pieces that overlap
    by two characters (a piece runs from two characters before its part to the
    separator after it), so that each trigram of a text is in a piece (by where it
    ends), and so is each word (a separator is no word character; the two characters
    before a part are at most one of another word's and a separator). Pieces repeat far
    more than texts do (words, JSON keys and values): each distinct one is read once."""
    first = separators[0]
    others = str.maketrans(dict.fromkeys(separators[1:], first))
    found: set[str] = set()
    add = found.add
    for text in set(texts):
        if not text:
            continue
        start = 0
        # The same length: each separator as the first, so one split finds them all.
        for part in text.translate(others).split(first) if others else text.split(first):
            end = start + len(part) + 1
            add(text[start - 2 if start >= 2 else 0 : end])
            start = end
    return found


def trigrams(cut: Iterable[str]) -> set[str]:
    """Every run of three characters of the pieces (of ``pieces``)."""
    found: set[str] = set()
    update = found.update
    for piece in cut:
        update(piece[index : index + 3] for index in range(len(piece) - 2))
    return found


def word_prefixes(cut: Iterable[str]) -> set[str]:
    """The prefixes of ``WORD_PREFIXES`` characters of every word of the texts (or
    pieces of them: a fragment of another word in a piece's overlap is one character,
    too short to count)."""
    found: set[str] = set()
    add = found.add
    for text in cut:
        for word in _LONG_WORD.findall(text):
            for length in WORD_PREFIXES:
                if length > len(word):
                    break
                add(word[:length])
    return found


def prefixes(word: str) -> list[str]:
    """The prefixes of a word a block holds (``WORD_PREFIXES`` no longer than it)."""
    return [word[:length] for length in WORD_PREFIXES if length <= len(word)]


def entry_hash(entry: str) -> int:
    """A 64-bit hash of an entry (BLAKE2b of its UTF-8): the same in every process and
    version, unlike ``hash()``."""
    data = entry.encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


def positions(hashed: int, bits: int, hashes: int) -> list[int]:
    first, step = hashed & 0xFFFFFFFF, (hashed >> 32) | 1
    return [(first + index * step) % bits for index in range(hashes)]


def bloom_filter(entries: set[str]) -> bytes:
    """A Bloom filter of the entries: ``BITS_PER_ENTRY`` bits each, at most
    ``MAX_FILTER_BYTES``; empty for none."""
    if not entries:
        return b""
    size = min(MAX_FILTER_BYTES, -(-len(entries) * BITS_PER_ENTRY // 8))
    bits = size * 8
    array = bytearray(size)
    for entry in entries:
        for position in positions(entry_hash(entry), bits, HASHES):
            array[position >> 3] |= 1 << (position & 7)
    return bytes(array)


# -- building -------------------------------------------------------------------------


def build(columns: dict[str, list[Any]], *, block_lines: int) -> bytes:
    """The index of a segment's rows (``columns`` as the compactor writes them: sorted,
    ``ts``, ``line``, ``meta`` and the folded columns among them), in blocks of
    ``block_lines`` rows."""
    ts: list[int] = columns["ts"]
    count = len(ts)
    blocks = range(0, count, block_lines)
    parts = [_HEADER.pack(MAGIC, VERSION, HASHES, _FILTERS, len(blocks))]
    for first in blocks:
        last = min(first + block_lines, count)
        line_pieces = pieces(columns["line_folded"][first:last], COLUMNS["line_folded"])
        meta_pieces = pieces(columns["meta_folded"][first:last], COLUMNS["meta_folded"])
        searched = _searched_texts(columns["line"][first:last], columns["meta"][first:last])
        filters = (
            bloom_filter(trigrams(line_pieces)),
            bloom_filter(trigrams(meta_pieces)),
            bloom_filter(word_prefixes(line_pieces) | word_prefixes(searched)),
            bloom_filter(word_prefixes(meta_pieces)),
        )
        block_ts = ts[first:last]
        parts.append(_BLOCK.pack(last - first, min(block_ts), max(block_ts)))
        parts.extend(_SIZE.pack(len(data)) for data in filters)
        parts.extend(filters)
    return b"".join(parts)


def _searched_texts(lines: list[str], metas: list[str | None]) -> list[str]:
    """The case-folded searched texts of the lines whose text was parsed into a message
    (the others search the line itself, which ``line_folded`` is)."""
    found = []
    for line, meta in zip(lines, metas, strict=True):
        if meta is None or '"message"' not in meta:
            continue
        message = orjson.loads(meta).get("message")
        if isinstance(message, str):
            text = searched_text(line, {"message": message})
            if text is not line:
                found.append(text.casefold())
    return found


# -- reading --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Block:
    """A block of a segment's rows: file row numbers ``first_row`` to
    ``first_row + rows - 1``, with its filters (by ``LINE_TRIGRAMS`` ...)."""

    first_row: int
    rows: int
    min_ts: int
    max_ts: int
    filters: tuple[memoryview, ...]


@dataclass(frozen=True, slots=True)
class SegmentIndex:
    blocks: tuple[Block, ...]
    hashes: int
    size: int  # bytes

    @property
    def lines(self) -> int:
        return sum(block.rows for block in self.blocks)


def parse(data: bytes | None) -> SegmentIndex | None:
    """The index of a registry row (None: written without one, or in a form this
    version does not know: the segment is read whole)."""
    if not data or len(data) < _HEADER.size:
        return None
    magic, version, hashes, filters, count = _HEADER.unpack_from(data)
    if magic != MAGIC or version != VERSION or hashes < 1 or filters != _FILTERS:
        return None
    view = memoryview(data)
    offset = _HEADER.size
    first_row = 0
    blocks = []
    for _ in range(count):
        head = offset + _BLOCK.size + _SIZE.size * filters
        if head > len(data):
            return None
        rows, min_ts, max_ts = _BLOCK.unpack_from(data, offset)
        sizes = struct.unpack_from(f"<{filters}I", data, offset + _BLOCK.size)
        offset = head + sum(sizes)
        if offset > len(data):
            return None
        starts = [head + sum(sizes[:index]) for index in range(filters)]
        views = tuple(view[start : start + size] for start, size in zip(starts, sizes, strict=True))
        blocks.append(Block(first_row, rows, min_ts, max_ts, views))
        first_row += rows
    if offset != len(data):
        return None
    return SegmentIndex(tuple(blocks), hashes, len(data))


# -- the process's parsed indexes ---------------------------------------------------------


class IndexCache:
    """Parsed indexes by segment, the least recently used dropped past ``max_bytes``.
    A segment's index never changes, so an entry is valid for as long as the segment
    exists (and one of a dropped segment is never asked for again)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[str, str], SegmentIndex | None] = OrderedDict()
        self._used = 0
        self._lock = threading.Lock()

    def known(self, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], SegmentIndex | None]:
        found = {}
        with self._lock:
            for key in keys:
                if key in self._entries:
                    self._entries.move_to_end(key)
                    found[key] = self._entries[key]
        return found

    def add(self, key: tuple[str, str], index: SegmentIndex | None) -> None:
        with self._lock:
            if key in self._entries:
                return
            self._entries[key] = index
            self._used += _weight(index)
            while self._used > self.max_bytes and self._entries:
                _key, dropped = self._entries.popitem(last=False)
                self._used -= _weight(dropped)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._used = 0


def _weight(index: SegmentIndex | None) -> int:
    # The bytes, and the objects around them (a block, two views) roughly.
    return 200 + (0 if index is None else index.size + 300 * len(index.blocks))


INDEXES = IndexCache(CACHE_BYTES)

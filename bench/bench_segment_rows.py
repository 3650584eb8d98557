"""What a read restricted to some rows of a segment's row groups costs DuckDB.

``python bench/bench_segment_rows.py [--lines 1m]``

The question behind an index finer than a row group (docs/log-store.md, "A finer
index: measured"): if the index knows which blocks of a few hundred lines, or which
rows, of a row group may hold a rare word, how much of DuckDB's work does telling it
save? Writes one Parquet file of ``--lines`` lines shaped like a segment's text
columns (a line of a dozen words and a hex id, its folded copy, a small meta JSON, id
and ts), a rare word in 990 lines a million at random rows (as the search data set's
rare word: in nearly every row group), in row groups of 16,384 lines (the segments'),
and, for the row group sizes and page sizes, copies written with 2,048-line row groups
and with 16 KiB pages. Then, in one DuckDB thread, the CPU (best of 3, this process:
DuckDB runs in it) of:

- the floor: decoding the line and meta columns of every row (``sum(strlen(...))``);
- the read as segments run it (``line_folded LIKE '%word%'``, the line and meta of
  matching rows);
- the same restricted to the rows the index would keep: an OR of ``file_row_number``
  ranges (the form ``segments.scan`` uses) for blocks of 256, 1,024 and 16,384 lines;
  the same ORed ranges bounded as ``segments.scan`` bounds them; a bitmap of blocks
  (``get_bit``), ANDed with the ``LIKE`` and as ``CASE WHEN <bit> THEN <LIKE>`` (which
  makes DuckDB evaluate the ``LIKE`` on the kept rows only); exact postings (the
  matching rows themselves: ``file_row_number IN (...)``, a bitmap of rows);
- one contiguous range of 1 to 32,768 rows (ms of the statement, not per million
  lines), and, for blocks of 1,024, a ``UNION ALL`` of one scan per range;
- a fixed fraction of every row group (one range of 256 to 2,048 rows in each, as an
  OR), without the ``LIKE``: does DuckDB decode only those rows?

Prints each as ms of CPU per million lines and as a ratio to the floor. Nothing is
checked but the row counts: every variant with the ``LIKE`` must find the rare word's
lines (MISMATCH and exit status 1 otherwise).
"""

from __future__ import annotations

import argparse
import random
import resource
import string
import sys
import tempfile
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from bench_search import parse_count
from tidegate.logs.segments import MAX_SCAN_RANGES, bounded_ranges

RUNS = 3
WORD = "quarantined"
RARE_PER_MILLION = 990
ROW_GROUP = 16_384


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def write_files(directory: Path, lines: int, seed: int) -> tuple[dict[str, Path], list[int]]:
    rng = random.Random(seed)
    vocabulary = [
        "".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 10))) for _ in range(5_000)
    ]
    rare = sorted(rng.sample(range(lines), max(1, lines * RARE_PER_MILLION // 1_000_000)))
    wanted = set(rare)
    texts = []
    for row in range(lines):
        words = rng.choices(vocabulary, k=12)
        if row in wanted:
            words.insert(rng.randrange(12), WORD)
        texts.append(" ".join(words) + f" id={rng.getrandbits(48):012x}")
    table = pa.table(
        {
            "id": list(range(lines)),
            "ts": list(range(lines)),
            "line": texts,
            "line_folded": texts,
            "meta": [f'{{"request_id":"req_{row:09d}"}}' for row in range(lines)],
        }
    )
    files = {
        "row groups 16,384": directory / "segment.parquet",
        "row groups 2,048": directory / "small_groups.parquet",
        "pages 16 KiB": directory / "small_pages.parquet",
    }
    pq.write_table(table, files["row groups 16,384"], compression="zstd", row_group_size=ROW_GROUP)
    pq.write_table(table, files["row groups 2,048"], compression="zstd", row_group_size=2_048)
    pq.write_table(
        table,
        files["pages 16 KiB"],
        compression="zstd",
        row_group_size=ROW_GROUP,
        data_page_size=16 * 1024,
        write_page_index=True,
    )
    return files, rare


def groups_in(lines: int) -> int:
    return -(-lines // ROW_GROUP)


def blocks_of(rows: list[int], block: int) -> list[int]:
    return sorted({row // block for row in rows})


def ranges_of(blocks: list[int], block: int) -> list[tuple[int, int]]:
    ranges: list[tuple[int, int]] = []
    for number in blocks:
        first, last = number * block, number * block + block - 1
        if ranges and ranges[-1][1] + 1 == first:
            ranges[-1] = (ranges[-1][0], last)
        else:
            ranges.append((first, last))
    return ranges


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=parse_count, default=1_000_000)
    parser.add_argument("--seed", type=int, default=8)
    args = parser.parse_args()
    lines: int = args.lines
    per_million = 1_000_000 / lines
    connection = duckdb.connect(":memory:", config={"threads": 1})
    failed: list[str] = []

    def measure(name: str, sql: str, parameters: list[object], floor: float | None) -> float:
        best = None
        rows = None
        for _ in range(RUNS):
            started = cpu()
            rows = connection.execute(sql, parameters).fetchall()
            spent = cpu() - started
            best = spent if best is None else min(best, spent)
        assert best is not None
        assert rows is not None
        # A read of some rows is not scaled to a million lines: it is the statement's.
        ms = best * 1000 * (per_million if floor is not None or "BETWEEN" not in sql else 1)
        ratio = "" if not floor else f"{ms / floor:5.2f}x"
        if "LIKE" in sql and len(rows) != len(rare):
            failed.append(f"{name}: {len(rows)} rows, not {len(rare)}")
        shown = f"{ms:,.0f}" if ms >= 100 else f"{ms:,.1f}"
        print(f"| {name} | {len(rows):,} | {shown} | {ratio} |", flush=True)
        return ms

    with tempfile.TemporaryDirectory() as scratch:
        files, rare = write_files(Path(scratch), lines, args.seed)
        print(f"{lines:,} lines, {len(rare):,} hold {WORD!r}; DuckDB {duckdb.__version__}")
        for label, path in files.items():
            print(
                f"\n{label}: {path.stat().st_size / 1e6 * per_million:,.1f} MB per million lines\n"
            )
            print("| read | rows | CPU ms per million lines | / floor |")
            print("|---|---:|---:|---:|")
            source = f"read_parquet('{path}', file_row_number = true)"
            columns = "id, ts, line, meta"
            like = f"line_folded LIKE '%{WORD}%'"
            floor = measure(
                "floor: decode line and meta, every row",
                f"SELECT count(*), sum(strlen(line)), sum(strlen(meta)) FROM {source}",
                [],
                None,
            )
            measure(
                "LIKE over every row (as today)",
                f"SELECT {columns} FROM {source} WHERE {like}",
                [],
                floor,
            )
            for block in (16_384, 1_024, 256):
                kept = blocks_of(rare, block)
                ranges = ranges_of(kept, block)
                total = -(-lines // block)
                for label, tested in (
                    (f"OR of {len(ranges):,} ranges", ranges),
                    (
                        f"OR of them bounded to {MAX_SCAN_RANGES}",
                        bounded_ranges(ranges, MAX_SCAN_RANGES),
                    ),
                ):
                    within = " OR ".join(f"file_row_number BETWEEN {a} AND {b}" for a, b in tested)
                    measure(
                        f"blocks of {block:,}: {len(kept):,} of {total:,} kept, {label}",
                        f"SELECT {columns} FROM {source} WHERE ({within}) AND {like}",
                        [],
                        floor,
                    )
                marks = ["0"] * total
                for number in kept:
                    marks[number] = "1"
                in_kept = f"get_bit(?::BITSTRING, (file_row_number // {block})::INTEGER) = 1"
                measure(
                    f"blocks of {block:,}: bitmap (get_bit) AND the LIKE",
                    f"SELECT {columns} FROM {source} WHERE {in_kept} AND {like}",
                    ["".join(marks)],
                    floor,
                )
                measure(
                    f"blocks of {block:,}: CASE WHEN bitmap THEN the LIKE",
                    f"SELECT {columns} FROM {source} WHERE CASE WHEN {in_kept} THEN {like} ELSE FALSE END",
                    ["".join(marks)],
                    floor,
                )
            postings = ", ".join(str(row) for row in rare)
            measure(
                "postings: file_row_number IN (the matching rows) AND the LIKE",
                f"SELECT {columns} FROM {source} WHERE file_row_number IN ({postings}) AND {like}",
                [],
                floor,
            )
            marks = ["0"] * lines
            for row in rare:
                marks[row] = "1"
            measure(
                "postings: CASE WHEN a row's bit THEN the LIKE",
                f"SELECT {columns} FROM {source} WHERE CASE WHEN "
                f"get_bit(?::BITSTRING, file_row_number::INTEGER) = 1 THEN {like} ELSE FALSE END",
                ["".join(marks)],
                floor,
            )
            measure(
                "postings without the LIKE (line_folded not read)",
                f"SELECT {columns} FROM {source} WHERE file_row_number IN ({postings})",
                [],
                floor,
            )
            # One contiguous range in one row group: does DuckDB skip the rest of it?
            middle = (groups_in(lines) // 2) * ROW_GROUP
            for width in (1, 2_048, ROW_GROUP, 2 * ROW_GROUP):
                measure(
                    f"one range of {width:,} rows from a row group's start: decode line and meta",
                    f"SELECT count(*), sum(strlen(line)), sum(strlen(meta)) FROM {source} "
                    f"WHERE file_row_number BETWEEN {middle} AND {middle + width - 1}",
                    [],
                    None,
                )
            ranges = ranges_of(blocks_of(rare, 1_024), 1_024)
            measure(
                f"blocks of 1,024: a UNION ALL of {len(ranges):,} scans of one range each",
                " UNION ALL ".join(
                    f"SELECT {columns} FROM {source} "
                    f"WHERE file_row_number BETWEEN {a} AND {b} AND {like}"
                    for a, b in ranges
                ),
                [],
                floor,
            )
            groups = -(-lines // ROW_GROUP)
            for width in (2_048, 256):
                within = " OR ".join(
                    f"file_row_number BETWEEN {group * ROW_GROUP + 4096} "
                    f"AND {group * ROW_GROUP + 4096 + width - 1}"
                    for group in range(groups)
                )
                measure(
                    f"{width:,} rows of each 16,384: decode line and meta",
                    f"SELECT count(*), sum(strlen(line)), sum(strlen(meta)) FROM {source} WHERE {within}",
                    [],
                    floor,
                )
    for problem in failed:
        print("MISMATCH", problem)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

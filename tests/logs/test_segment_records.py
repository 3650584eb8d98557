"""A segment's records rendered by DuckDB (``segments.with_records``) are exactly the
bytes ``export_record`` builds from the same row, with the same weight (``_weight``),
and in the same order: random rows of nasty text (quotes, backslashes, every control
character, non-ASCII, astral characters, U+2028, DEL, literal escapes) written into a
real segment file and read back by DuckDB."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import duckdb
import orjson

from tidegate import json_codec
from tidegate.export.service import _weight, export_record
from tidegate.logs.read_queries import as_line_row
from tidegate.logs.segments import LINE_COLUMNS, NAMES, scan, with_records, write_segment
from tidegate.logs.store import document_json
from tidegate.logs.tiers import RECORD_OVERHEAD

# Plain pieces: what renders (escaped or not); then what the rendering leaves to Python
# or what only looks like it (every control character, a literal ``\u00``, jsonb's
# and repr's spellings).
PLAIN = ['"', "\\", "/", "a", "Z", " ", "é", "東", "😀", "\u2028", "\u2029", "\x7f", "\ufffd", "7"]
PIECES = [*PLAIN, *(chr(code) for code in range(0x20)), "\\u00", ": ", '", "', "e-0", "NaN"]


def nasty(generator: random.Random, *, plain: bool = False) -> str:
    pieces = PLAIN if plain else PIECES
    return "".join(generator.choice(pieces) for _ in range(generator.randrange(12)))


def maybe(generator: random.Random) -> str | None:
    return None if generator.random() < 0.5 else nasty(generator, plain=generator.random() < 0.97)


def value(generator: random.Random, depth: int = 0) -> Any:
    kind = generator.randrange(8 if depth < 2 else 5)
    if kind == 0:
        return nasty(generator, plain=generator.random() < 0.9)
    if kind == 1:
        return generator.choice([0, -1, 2**63 - 1, 2**64 - 1, 10**25, 1e-7, 1.5e-5, 0.1, 1e300])
    if kind == 2:
        return generator.choice([True, False, None])
    if kind == 3:
        return generator.uniform(-1e6, 1e6)
    if kind == 4:
        return generator.randrange(10**9)
    if kind == 5:
        return [value(generator, depth + 1) for _ in range(generator.randrange(3))]
    return {nasty(generator, plain=True): value(generator, depth + 1) for _ in range(3)}


def spelled(generator: random.Random, document: Any) -> str | None:
    """``document`` as one of the writers that stored it spelled it."""
    if document is None:
        return None
    writer = generator.randrange(8)
    if writer == 0:
        return json.dumps(document)
    if writer == 1:
        return json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    return document_json(document)


def rows(count: int, seed: int) -> dict[str, list[Any]]:
    generator = random.Random(seed)
    columns: dict[str, list[Any]] = {name: [] for name in NAMES}
    for index in range(count):
        line = nasty(generator, plain=generator.random() < 0.8)
        tags = generator.choice(
            [
                None,
                None,
                [],
                ["a", "b"],
                ["x", 7, 1.5e-7],
                [nasty(generator, plain=True)],
                [nasty(generator)],
            ]
        )
        meta = None if generator.random() < 0.15 else {"k": value(generator), "n": index}
        unindexed = {"hidden": nasty(generator)} if generator.random() < 0.1 else None
        row = {
            "id": 1_000 + index,
            "ts": 1_700_000_000_000 + index // 3,
            "received_ms": 1_700_000_000_000,
            "host": nasty(generator, plain=generator.random() < 0.95),
            "app": maybe(generator),
            "level": maybe(generator),
            "env": maybe(generator),
            "file": maybe(generator),
            "ip": maybe(generator),
            "mac": maybe(generator),
            "tags": spelled(generator, tags),
            "meta": spelled(generator, meta),
            "line": line,
            "meta_unindexed": spelled(generator, unindexed),
            "size_bytes": len(line.encode()),
        }
        for name in NAMES:
            columns[name].append(row.get(name, (row.get(name.removesuffix("_folded")) or "")))
    return columns


def read(path: Path, *, render: bool) -> list[tuple[Any, ...]]:
    order = "ts ASC, id ASC"
    statement = scan(
        [str(path)],
        None,
        columns=", ".join(LINE_COLUMNS),
        where="ts >= ?",
        parameters=[0],
        top=(order, 100_000),
    )
    sql = statement.sql
    if render:
        sql = with_records(sql, order=order, overhead=RECORD_OVERHEAD)
    connection = duckdb.connect()
    try:
        return connection.execute(sql, statement.parameters).fetchall()
    finally:
        connection.close()


def test_rendered_records_are_export_records_bytes(tmp_path: Path) -> None:
    count = 4_000
    write_segment(tmp_path, "records.parquet", rows(count, seed=19), row_group_lines=1_000)
    path = tmp_path / "records.parquet"
    plain = [as_line_row(row) for row in read(path, render=False)]
    rendered = [as_line_row(row) for row in read(path, render=True)]
    assert [(row.ts, row.id) for row in rendered] == [(row.ts, row.id) for row in plain]
    escapes = passed = 0
    for full, row in zip(plain, rendered, strict=True):
        if row.record_json is None:
            # Left to Python: every field is there, as read without rendering.
            assert row[:13] == full[:13]
            assert row.record_weight is None
            continue
        passed += 1
        expected = json_codec.dumps(export_record(full))
        assert row.record_json.encode() == expected, full
        assert orjson.dumps(orjson.Fragment(row.record_json)) == expected
        assert row.record_weight == _weight(full)
        assert row[2:13] == (None,) * 11
        escapes += "\\" in row.record_json
    # The rendering is taken for most rows, nasty ones included, and left for the rest.
    assert count * 0.25 < passed < count * 0.9, passed
    assert escapes > count * 0.1, escapes


def test_a_record_holding_what_duckdb_spells_unlike_orjson_is_left_to_python(
    tmp_path: Path,
) -> None:
    columns: dict[str, list[Any]] = {name: [] for name in NAMES}
    cases = [
        ("\x0b", '{"a":1}', None, None),  # \u000B in DuckDB, \u000b in orjson
        ("ok", '{"a": 1}', None, None),  # jsonb's spacing
        ("ok", '{"a":1e-07}', None, None),  # repr's float
        ("ok", '{"a":"\\u00e9"}', None, None),  # an escape
        ("ok", '{"a":123456789012345678901}', None, None),  # past 64 bits
        ("ok", '{"a":1}', '{"b":2}', None),  # an unindexed meta to merge
        ("ok", '{"a":1}', None, '["\\n"]'),  # an escaped tag
        ("ok", '{"a":1}', None, '["a", 1]'),  # a space after a comma
        ('ok \t\n"\\ \u2028\x7f😀', '{"a":[1,2.5,"é"]}', None, '["a","b"]'),
        ("ok", None, None, "[]"),
        ("ok", None, None, '["a", "b é"]'),  # tags in jsonb's spelling
    ]
    for index, (line, meta, unindexed, tags) in enumerate(cases):
        row: dict[str, Any] = dict.fromkeys(NAMES, None)
        row.update(
            id=index + 1, ts=index, received_ms=0, host="h", line=line, meta=meta,
            meta_unindexed=unindexed, tags=tags, line_folded=line, size_bytes=1,
        )  # fmt: skip
        for name in NAMES:
            columns[name].append(row[name])
    write_segment(tmp_path, "cases.parquet", columns)
    rendered = [as_line_row(row) for row in read(tmp_path / "cases.parquet", render=True)]
    assert [row.record_json is not None for row in rendered] == [False] * 8 + [True] * 3
    assert rendered[8].record_json == (
        '{"_id":"9","_ts":8,"_host":"h","_tag":["a","b"],"_meta":{"a":[1,2.5,"é"]},'
        '"_line":"ok \\t\\n\\"\\\\ \u2028\x7f😀"}'
    )
    assert rendered[9].record_json == '{"_id":"10","_ts":9,"_host":"h","_line":"ok"}'
    assert (
        rendered[10].record_json
        == '{"_id":"11","_ts":10,"_host":"h","_tag":["a","b é"],"_line":"ok"}'
    )


def test_duckdb_renders_a_meta_exactly_where_in_own_spelling_takes_it(tmp_path: Path) -> None:
    """The SQL's rule for a meta (``_RECORD_SURE``) and ``json_codec.in_own_spelling``
    are one rule: for rows where nothing else leaves the record to Python, DuckDB renders
    the record exactly when ``in_own_spelling`` says the meta is in the store's own
    spelling, over random documents in every writer's spelling and each thing it refuses."""
    generator = random.Random(29)
    metas = [
        spelled(generator, {"k": value(generator), "n": index}) or "" for index in range(3_000)
    ]
    refused = ['": ', "\\", "e-0", "NaN", "Infinity", "-Infinity", "1" * 20, "'"]
    for piece in refused:
        metas += [f'{{"a":"{piece}"}}', f'{{"a":{piece}}}', f'{{"{piece}":1}}']
    metas += ['{"a":1e-7}', '{"a":18446744073709551615}', '{"a":1844674407370955161}', "[1]"]
    columns: dict[str, list[Any]] = {name: [] for name in NAMES}
    for index, meta in enumerate(metas):
        row: dict[str, Any] = dict.fromkeys(NAMES, None)
        row.update(id=index + 1, ts=index, received_ms=0, host="h", line="ok", meta=meta)
        row.update(line_folded="ok", size_bytes=2)
        for name in NAMES:
            columns[name].append(row[name])
    write_segment(tmp_path, "metas.parquet", columns)
    rendered = [as_line_row(row) for row in read(tmp_path / "metas.parquet", render=True)]
    decided = [row.record_json is not None for row in rendered]
    assert decided == [json_codec.in_own_spelling(meta) for meta in metas]
    assert 500 < sum(decided) < len(metas) - 500

"""Export pages build their records directly (``export_record``), passing a stored meta
through as it is when it is already in the codec's own spelling: every answer must be
the bytes ``line_record`` (what archiving writes, and export wrote before) gives for the
same rows, from either tier, on both backends, whatever spelling a meta was stored in."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import text
from tests.conftest import AppClient
from tests.export.helpers import BASE_MS, insert_lines, now_ms, read_off_loop
from tests.factories import make_account, make_tenant
from tests.logs.test_segments import compact, config, tier_counts

from tidegate import json_codec
from tidegate.auth.secrets import Sealer
from tidegate.db.engine import Database
from tidegate.export.schemas import ExportRequest, ExportV1Request
from tidegate.export.service import (
    chunk_of_lines,
    encode,
    line_record,
    lines_v1,
    page_of_lines,
)
from tidegate.logs.filtering import parse_line_filter
from tidegate.logs.reading import PageReader
from tidegate.logs.store import NewLine, document_json, search_text

DAY_MS = 86_400_000

META: list[dict[str, Any] | None] = [
    None,
    {},
    {"user": {"name": "Søren", "city": "東京", "emoji": "🙂"}, "n": [1, 2.5, None, True]},
    # Names the record reserves: kept inside ``_meta``, never over the fields.
    {"_line": "not the line", "_host": "x", "level": "meta level", "_id": 7, "_ts": "t"},
    # Fields parsed from a JSON line, as the parser stores them.
    {"status": 500, "duration_ms": 18.003, "path": "/api/v1/x", "ok": False},
    # Floats in every spelling orjson and the standard library differ in or agree on.
    {"tiny": 1e-7, "small": 1.5e-5, "edge": 0.0001, "zero": -0.0, "big": 1e15, "huge": 1.5e300},
    # Stored through the writer's fallback (json.dumps): a float past 1e16, an integer
    # past 64 bits, a NUL, a lone surrogate, non-finite numbers.
    {"e": 1e16, "f": 2.5e-6},
    {"big": 2**70, "max": 2**64 - 1, "min": -(2**63)},
    {"nul": "a\x00b", "bad": "x\ud800y"},
    {"nan": math.nan, "inf": [math.inf, -math.inf]},
    # Escapes of every kind the codec writes.
    {"quote": 'say "hi"', "slash": "C:\\temp\\x", "ctl": "a\nb\tc\x01\x1f", "u2028": "\u2028"},
    {"deep": {"a": {"b": {"c": [{"d": "e-07 NaN Infinity 123456789012345678901"}]}}}},
]

# Meta texts other writers stored (SQLite keeps the text as written; PostgreSQL's jsonb
# reads it as its own): the standard library's default separators and ASCII escapes (the
# ORM before the store wrote rows), ``repr``'s floats, integers past 64 bits, NaN.
LEGACY = [
    '{"a": 1, "b": "\\u00e9", "c": [1, 2]}',
    '{"x":1.5e-05,"y":1e-07}',
    '{"n":123456789012345678901234}',
    '{"a":NaN,"b":[Infinity,-Infinity]}',
    '{"a":"\\ud83d\\ude00","b":"\\u00e9"}',
]
# Not among them: what no writer of the store spells: numbers as ``1E+2`` or ``1.50``
# (Python and orjson write neither; PostgreSQL's jsonb keeps ``1.50`` but is refused for
# its spaces) and a key twice (written from a dict). ``json_codec.in_own_spelling``
# trusts those.


# Lines' texts (by index): quotes, backslashes, every control character, DEL, U+2028,
# astral characters, a literal escape.
LINE_TEXTS = [
    "line {}",
    'line {} é 🙂 "q"',
    "line {} C:\\temp\\x \\u2028 \\n \t\n\r\u2028\u2029\x7f 😀 /",
    "line {} " + "".join(chr(code) for code in range(1, 0x20)),
]


def lines() -> list[NewLine]:
    made = []
    for index, meta in enumerate(META + [{"legacy": index} for index in range(len(LEGACY))]):
        made.append(
            NewLine(
                line=LINE_TEXTS[index % len(LINE_TEXTS)].format(index),
                ts=BASE_MS + index,
                host=f"host-{index}",
                app="app" if index % 3 else None,
                level="error" if index % 2 else None,
                env="prod" if index % 4 == 1 else None,
                file=f"/var/log/{index}.log" if index % 3 == 1 else None,
                ip="10.0.0.1" if index % 5 == 1 else None,
                mac="aa:bb:cc:dd:ee:ff" if index % 5 == 2 else None,
                tags=[["a", "b"], [], ["ü"], None][index % 4],
                meta=meta,
                meta_unindexed=(
                    {"hidden": index, "n": "unindexed"}
                    if index % 6 == 5 and index < len(META)
                    else None
                ),
            )
        )
    return made


async def store_legacy(url: str, account_id: str) -> None:
    """The last ``len(LEGACY)`` lines' meta as the legacy texts (PostgreSQL: those jsonb
    can hold)."""
    db = Database.connect(url)
    sqlite = url.startswith("sqlite")
    try:
        async with db.write_sessions() as session:
            rows = (
                await session.execute(
                    text(
                        "SELECT id, line, CAST(meta AS TEXT) FROM log_lines "
                        "WHERE account_id = :a ORDER BY ts"
                    ),
                    {"a": account_id},
                )
            ).all()
            for (line_id, line, stored), meta in zip(rows[-len(LEGACY) :], LEGACY, strict=True):
                if not sqlite and "NaN" in meta:
                    continue
                if sqlite:
                    # The contentless search index is told the old text and the new.
                    await session.execute(
                        text(
                            "INSERT INTO log_search (log_search, rowid, text) "
                            "VALUES ('delete', :i, :t)"
                        ),
                        {"i": line_id, "t": search_text(line, stored)},
                    )
                    await session.execute(
                        text("INSERT INTO log_search (rowid, text) VALUES (:i, :t)"),
                        {"i": line_id, "t": search_text(line, meta)},
                    )
                await session.execute(
                    text(
                        "UPDATE log_lines SET meta = :m WHERE id = :i"
                        if sqlite
                        else "UPDATE log_lines SET meta = CAST(:m AS jsonb) WHERE id = :i"
                    ),
                    {"m": meta, "i": line_id},
                )
            await session.commit()
    finally:
        await db.dispose()


async def answers(url: str, account_id: str, segment_dir: Path) -> dict[str, bytes]:
    """Each export form's bytes, and the same forms built by ``line_record`` from the
    rows of both tiers."""
    db = Database.connect(url)
    db.segment_dir = segment_dir
    sealer = Sealer(b"s" * 32)

    def request(query: str | None) -> ExportRequest:
        return ExportRequest(
            from_ms=BASE_MS - 1,
            to_ms=BASE_MS + 10_000,
            size=1_000,
            prefer="head",
            line_filter=parse_line_filter(hosts=None, apps=None, levels=None, query=query),
            pagination_id=None,
        )

    def read(reader: PageReader) -> dict[str, bytes]:
        _top, rows = chunk_of_lines(
            reader, account_id, from_ms=BASE_MS - 1, to_ms=BASE_MS + 10_000, max_id=None,
            after=None, size=1_000,
        )  # fmt: skip
        old = [line_record(row, row.meta()) for row in rows]

        # No filter (exact: the meta is not decoded) and a term confirmed by the matcher
        # (every line holds the word "line": the meta decoded, then the record built).
        def page(query: str | None, *, render: bool = False) -> list[Any]:
            lines: list[Any] = page_of_lines(
                reader=reader,
                sealer=sealer,
                account_id=account_id,
                request=request(query),
                render=render,
            )["lines"]
            return lines

        plain = page(None)
        confirmed = page("line")
        v1 = lines_v1(
            reader=reader,
            account_id=account_id,
            request=ExportV1Request(export=request(None), size=None, as_json=False),
        )
        passed = sum(isinstance(record.get("_meta"), orjson.Fragment) for record in plain)
        # As /v2/export and v1 ask: records the segments rendered whole, where they can.
        rendered = page(None, render=True)
        rendered_v1 = lines_v1(
            reader=reader,
            account_id=account_id,
            request=ExportV1Request(export=request(None), size=None, as_json=False),
            render=True,
        )
        return {
            "old": encode(old),
            "old ndjson": b"".join(encode(record) + b"\n" for record in old),
            "plain": encode(plain),
            "confirmed": encode(confirmed),
            "v1 json": encode(v1),
            "v1 ndjson": b"".join(encode(record) + b"\n" for record in v1),
            "rendered": encode(rendered),
            "rendered v1 json": encode(rendered_v1),
            "rendered v1 ndjson": b"".join(encode(record) + b"\n" for record in rendered_v1),
            "rendered whole": str(
                sum(isinstance(record, orjson.Fragment) for record in rendered)
            ).encode(),
            "passed through": str(passed).encode(),
            "rows": str(len(rows)).encode(),
        }

    return await read_off_loop(db, account_id, read)


def assert_same(found: dict[str, bytes], *, jsonb: bool, segments: bool) -> None:
    assert int(found["rows"]) == len(META) + len(LEGACY)
    for form in ("plain", "confirmed", "v1 json", "rendered", "rendered v1 json"):
        assert found[form] == found["old"], form
    assert found["v1 ndjson"] == found["old ndjson"]
    assert found["rendered v1 ndjson"] == found["old ndjson"]
    # Records rendered whole by DuckDB: in segments only (the row store's are built in
    # Python), for the lines whose text it escapes as orjson does (not the one with
    # every control character) and whose meta is in the store's own spelling.
    assert (int(found["rendered whole"]) >= 4) if segments else found["rendered whole"] == b"0"
    if jsonb:
        # PostgreSQL's row store: jsonb's text (a space after every key) only for ``{}``.
        assert int(found["passed through"]) == 1
    else:
        # The store's own spelling is passed through (the fast path was taken): SQLite's
        # row store, and segments on both backends.
        assert int(found["passed through"]) >= 5


async def test_export_records_are_line_records_bytes_in_both_tiers(
    isolated_client: AppClient, tmp_path: Path
) -> None:
    client = isolated_client
    url = client.database_url
    sqlite = url.startswith("sqlite")
    account = await make_account(client, await make_tenant(url))
    await insert_lines(url, account.account_id, lines(), received_ms=now_ms() - 10 * DAY_MS)
    await store_legacy(url, account.account_id)
    root = client.settings.segment_directory

    hot = await answers(url, account.account_id, root)
    assert_same(hot, jsonb=not sqlite, segments=False)
    # Every meta is shown (the legacy ones normalised as the codec reads them).
    shown = [record.get("_meta") for record in json.loads(hot["old"])]
    assert shown[META.index({"nan": math.nan, "inf": [math.inf, -math.inf]})] in (
        {"nan": None, "inf": [None, None]},
    )

    await compact(url, config(root, after_ms=DAY_MS, window_ms=DAY_MS, max_lines=1_000))
    assert await tier_counts(url, account.account_id) == (0, len(META) + len(LEGACY))
    cold = await answers(url, account.account_id, root)
    assert_same(cold, jsonb=False, segments=True)
    assert cold["old"] == hot["old"]


def test_own_spelling_is_only_said_of_text_the_codec_writes_back_unchanged() -> None:
    """Random documents in every spelling a writer stored: whenever ``in_own_spelling``
    says yes, decoding and encoding give the text back, byte for byte; and the store's
    own spelling of a plain document is said yes to."""
    generator = random.Random(19)
    said_yes = 0

    def value(depth: int) -> Any:
        kind = generator.randrange(9 if depth < 3 else 6)
        if kind == 0:
            return generator.choice([0, 1, -1, 2**63 - 1, -(2**63), 2**64 - 1, 2**64, 10**25])
        if kind == 1:
            exponent = generator.uniform(-30, 30)
            return generator.choice([1, -1]) * 10**exponent
        if kind == 2:
            return generator.choice([1e-7, 1.5e-5, 1e16, 2.5e-6, 0.1, -0.0, 1e300, math.nan])
        if kind == 3:
            return "".join(
                generator.choice(["a", "é", '"', "\\", "\n", "\x01", "東", " ", ": ", "e-0", "7"])
                for _ in range(generator.randrange(8))
            )
        if kind == 4:
            return generator.choice([True, False, None])
        if kind == 5:
            return generator.randrange(10**6)
        if kind == 6:
            return [value(depth + 1) for _ in range(generator.randrange(4))]
        return {f"k{n}": value(depth + 1) for n in range(generator.randrange(4))}

    for _ in range(3_000):
        document = {f"f{n}": value(1) for n in range(generator.randrange(1, 5))}
        spellings = [
            document_json(document),
            json.dumps(document),
            json.dumps(document, ensure_ascii=False),
            json.dumps(document, ensure_ascii=False, separators=(",", ":")),
        ]
        try:
            spellings.append(orjson.dumps(document).decode())
        except orjson.JSONEncodeError:
            pass
        for spelled in spellings:
            assert spelled is not None
            if json_codec.in_own_spelling(spelled):
                said_yes += 1
                assert json_codec.dumps(json_codec.loads(spelled)) == spelled.encode(), spelled
    assert said_yes > 1_000
    assert json_codec.in_own_spelling(document_json({"a": [1, 2.5, "é", None], "b": {}}) or "")
    for spelled in LEGACY:
        assert not json_codec.in_own_spelling(spelled), spelled

"""The search text leaves a line's meta out when its text holds it (rule 2,
``store.search_text``): what it must keep for the SQL translation to stay a superset of
the matcher, and the rebuild of an index made by the older rule (migration 0021,
``search_index.refresh_if_stale``) on both backends.

The SQL translation against the matcher over such lines, on both backends and on
segments, is the property test of ``tests/logs/test_sql_filter.py``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from sqlalchemy import text
from tests.conftest import make_settings, open_client
from tests.factories import make_account, make_tenant
from tests.pipelines.test_migration_0008 import downgrade

from tidegate.db.engine import Database
from tidegate.db.migrate import upgrade_database
from tidegate.ingest.service import now_ms
from tidegate.logs import search_index
from tidegate.logs.parsing import parse_line
from tidegate.logs.schema_upkeep import upgrade_log_store
from tidegate.logs.store import (
    SEARCH_SEPARATOR,
    SEARCH_TEXT_VERSION,
    NewLine,
    document_json,
    meta_in_line,
    search_text,
    store_lines,
)
from tidegate.search.compiler import PREFIXED_FIELDS

# JSON lines as senders write them, each with whether its text holds the meta it is
# parsed into (orjson's compact spelling, reserved names prefixed).
JSON_LINES = [
    ('{"level":"info","message":"Saved","user":{"id":7}}', True),
    # Reserved names: stored as _status and __source, written without the "_".
    ('{"status":503,"_source":"K8s","path":"/x"}', True),
    ('2025-11-22T08:00:01Z done {"status":200,"took":1.5}', True),
    # A nested key keeps its name; so does a "_status" the sender wrote itself.
    ('{"user":{"status":"x"},"_status":1}', True),
    ('{"_status":1,"status":2}', False),  # stored as "_status" twice: the last is kept
    # Spellings orjson does not write: the meta is kept.
    ('{"a": 1, "b": "x"}', False),  # Python's json.dumps, spaces after : and ,
    ('{"m":"caf\\u00e9"}', False),  # non-ASCII escaped
    ('{"m":"CAF\\u00C9 ok"}', False),
    ('{"path":"\\/api\\/x"}', False),  # PHP's escaped slash
    ('{"html":"\\u003cb\\u003e"}', False),  # Go's escaped <, >
    ('{"a":1.50,"b":1e5,"c":-0.0}', False),  # float spellings
    ('{"a":1,"a":2}', False),  # a repeated key: the last one is kept
    ('{"b":1,"a":{"c":[1,2,{"d":null}]}}', True),
    ('{"say":"a \\"quoted\\" word\\\\n"}', True),
]


def _parsed(line: str, meta: dict[str, Any] | None = None) -> tuple[str, str]:
    parsed = parse_line(NewLine(line=line, ts=1, host="h", meta=meta))
    meta_json = document_json(parsed.meta)
    assert meta_json is not None
    return line, meta_json


def _keys_and_values(value: Any) -> Iterator[tuple[str | None, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield key, None
            yield from _keys_and_values(item)
    elif isinstance(value, list):
        for item in value:
            yield from _keys_and_values(item)
    else:
        yield None, value


def _looked_for(meta_json: str) -> set[str]:
    """What the SQL translation looks for in a search text to find this meta's keys
    and values (``logs.sql_filter``): ``key"`` (a reserved name's parsed copy without
    its ``_``) and each scalar's JSON spelling, case-folded, a string's without its
    quotes."""
    literals = set()
    for key, value in _keys_and_values(orjson.loads(meta_json)):
        if key is not None:
            folded = key.casefold()
            if folded[:1] == "_" and folded[1:] in PREFIXED_FIELDS:
                folded = folded[1:]
            literals.add(folded + '"')
        else:
            spelled = orjson.dumps(value).decode().casefold()
            literals.add(spelled[1:-1] if isinstance(value, str) else spelled)
    return literals


@pytest.mark.parametrize(("line", "held"), JSON_LINES)
def test_a_line_is_indexed_by_its_text_alone_when_it_holds_its_meta(line: str, held: bool) -> None:
    line, meta_json = _parsed(line)
    searched = search_text(line, meta_json)
    assert meta_in_line(line, meta_json) is held
    assert (searched == line.casefold()) is held
    if not held:
        assert searched == line.casefold() + SEARCH_SEPARATOR + meta_json.casefold()
    # Whatever the rule decided: every key and value the SQL translation may look for
    # is in the search text (a drop of something the index needs fails here).
    missing = {literal for literal in _looked_for(meta_json) if literal not in searched}
    assert not missing, (line, meta_json, missing)


def test_a_sender_meta_beside_the_parsed_fields_is_indexed() -> None:
    line, meta_json = _parsed('{"status":200,"a":"x"}', meta={"region": "eu-1"})
    assert meta_json == '{"_status":200,"a":"x","region":"eu-1"}'
    searched = search_text(line, meta_json)
    assert searched.endswith(SEARCH_SEPARATOR + meta_json)
    assert all(literal in searched for literal in _looked_for(meta_json))


def test_the_rule_reads_the_texts_alone() -> None:
    # Case-sensitive on the texts (folding maps each character alone, so a held text
    # is held folded too); the line may hold the meta anywhere.
    assert meta_in_line('x {"A":1} y', '{"A":1}')
    assert not meta_in_line('{"a":1}', '{"A":1}')
    assert not meta_in_line('{"status":1}', '{"status":1,"k":2}')
    # Every reserved name, top level or nested, "_" taken out after the opening quote
    # of a key only.
    for name in PREFIXED_FIELDS:
        assert meta_in_line(
            f'{{"{name}":1,"b":{{"{name}":2}}}}', f'{{"_{name}":1,"b":{{"_{name}":2}}}}'
        )
    assert not meta_in_line('{"k":"status"}', '{"k":"_status"}')
    assert not meta_in_line('{"x_status":1}', '{"x__status":1}')
    assert search_text("ABC", None) == "abc"
    assert search_text("ABC", "") == "abc"


def _held_by_definition(line: str, meta_json: str) -> bool:
    """``meta_in_line`` as its docstring states it, without its shortcuts."""
    unprefixed = meta_json.replace('"_status":', '"status":')
    for name in PREFIXED_FIELDS:
        if name[0] == "_":
            unprefixed = unprefixed.replace(f'"_{name}":', f'"{name}":')
    return meta_json in line or unprefixed in line


@pytest.mark.parametrize(
    "meta_json", ['{"_status":1,"a":"b"}', '{"a":1}', '{"__source":"k"}', "{}"]
)
def test_the_shortcuts_answer_as_the_rule_does(meta_json: str) -> None:
    # The tail compare and the first-character test (``meta_in_line``) only shorten
    # the way: the meta at the end, elsewhere, before spaces, spelled both ways, absent.
    unprefixed = meta_json.replace('"_', '"')
    for held in (meta_json, unprefixed, meta_json.replace('"a"', '"A"')):
        for line in (
            held,
            "x " + held,
            held + "  ",
            held + " " + held,
            "{" + held[1:-1],
            held.replace("{", "(", 1),
            meta_json + " " + unprefixed,
            "no brace at all",
        ):
            assert meta_in_line(line, meta_json) is _held_by_definition(line, meta_json), line


# -- the index made by the older rule ---------------------------------------------------


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'rule.sqlite3'}"
    return str(request.getfixturevalue("fresh_pg_url"))


async def _execute(url: str, sql: str, values: Any = None) -> list[tuple[Any, ...]]:
    db = Database.connect(url)
    try:
        async with db.write_sessions() as session:
            result = await session.execute(text(sql), values or {})
            rows = [tuple(row) for row in result] if result.returns_rows else []
            await session.commit()
            return rows
    finally:
        await db.dispose()


async def _rule(url: str) -> int:
    [(rule,)] = await _execute(url, "SELECT search_text_version FROM log_store_state")
    return int(rule)


def _old_text(line: str, meta_json: str | None) -> str:
    """Rule 1: the line and its meta JSON, whatever the line holds."""
    folded = line.casefold()
    return folded + SEARCH_SEPARATOR + meta_json.casefold() if meta_json else folded


HELD_LINE = '{"status":503,"message":"Disk full"}'


async def _store_lines(url: str, tmp_path: Path) -> str:
    """An account on the migrated database at ``url`` and two lines of it: one whose
    text holds its meta, one with a meta of its own; the account's id."""
    client, lifespan = await open_client(make_settings(url, tmp_path))
    try:
        account = await make_account(client, await make_tenant(url))
    finally:
        await client.aclose()
        await lifespan.__aexit__(None, None, None)
    db = Database.connect(url)
    try:
        async with db.write_sessions() as session:
            lines = [
                parse_line(NewLine(line=HELD_LINE, ts=1, host="h")),
                NewLine(line="plain words", ts=2, host="h", meta={"k": "v"}),
            ]
            await store_lines(
                session=session, account_id=account.account_id, lines=lines, received_ms=now_ms()
            )
            await session.commit()
    finally:
        await db.dispose()
    return account.account_id


async def test_0021_records_the_rule_of_a_store_with_lines(
    database_url: str, tmp_path: Path
) -> None:
    await upgrade_database(database_url)
    assert await _rule(database_url) == SEARCH_TEXT_VERSION  # empty: nothing to rebuild
    await _store_lines(database_url, tmp_path)
    await downgrade(database_url, "0020")
    await upgrade_database(database_url)
    assert await _rule(database_url) == 1  # indexed by the older rule
    await downgrade(database_url, "0020")  # and back


async def _vocabulary(url: str) -> list[tuple[Any, ...]]:
    """SQLite: the trigrams the FTS5 index holds with their row counts."""
    db = Database.connect(url)
    try:
        async with db.write_sessions() as session:
            await session.execute(
                text("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, log_search, row)")
            )
            return [
                tuple(row)
                for row in await session.execute(text("SELECT term, doc FROM temp.vocab"))
            ]
    finally:
        await db.dispose()


async def test_a_sqlite_index_made_by_the_older_rule_is_rebuilt(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'old-rule.sqlite3'}"
    await upgrade_database(url)
    await _store_lines(url, tmp_path)
    # The index as the previous version made it: every line with its meta.
    rows = await _execute(url, "SELECT id, line, meta FROM log_lines ORDER BY id")
    await _execute(url, "INSERT INTO log_search (log_search) VALUES ('delete-all')")
    await _execute(
        url,
        "INSERT INTO log_search (rowid, text) VALUES (:id, :text)",
        [{"id": row[0], "text": _old_text(row[1], row[2])} for row in rows],
    )
    await _execute(url, "UPDATE log_store_state SET search_text_version = 1")
    assert ("_st", 1) in await _vocabulary(url)  # the meta's "_status" was indexed

    await upgrade_log_store(url)  # as `tidegate serve` and `tidegate db upgrade` do
    assert await _rule(url) == SEARCH_TEXT_VERSION
    vocabulary = dict(await _vocabulary(url))
    assert "_st" not in vocabulary  # the held line is indexed by its text alone
    assert vocabulary["sta"] == 1
    assert vocabulary['k":'] == 1  # the other line keeps its meta
    # A delete recomputes each entry by the rule: nothing is left behind.
    db = Database.connect(url)
    try:
        async with db.write_sessions() as session:
            from sqlalchemy import delete

            from tidegate.models import LogLine

            gone = await search_index.delete_lines(session, delete(LogLine))
            await session.commit()
    finally:
        await db.dispose()
    assert gone == 2
    assert await _vocabulary(url) == []


async def test_postgresql_keeps_the_older_rules_texts(fresh_pg_url: str, tmp_path: Path) -> None:
    url = fresh_pg_url
    await upgrade_database(url)
    await _store_lines(url, tmp_path)
    await _execute(
        url,
        "UPDATE log_lines SET search = :text WHERE line = :line",
        {"text": _old_text(HELD_LINE, '{"_status":503,"message":"Disk full"}'), "line": HELD_LINE},
    )
    await _execute(url, "UPDATE log_store_state SET search_text_version = 1")
    before = await _execute(url, "SELECT id, search FROM log_lines ORDER BY id")
    await upgrade_log_store(url)
    # Recorded, not rebuilt: a text of the older rule holds all the newer one does.
    assert await _rule(url) == SEARCH_TEXT_VERSION
    assert await _execute(url, "SELECT id, search FROM log_lines ORDER BY id") == before
    assert before[0][1] != HELD_LINE.casefold()

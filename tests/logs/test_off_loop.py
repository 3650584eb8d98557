"""No export page is read, decoded, filtered or encoded on the event loop (issue 7,
item 5): a worker's loop serves every tenant, and a page may hold 10,000 lines of any
size.

Structure, on both backends: the page's per-row work (decoding a row into a record,
matching the filter) runs in a thread that has no event loop, and on SQLite no export
query goes through the app's read engine (whose driver runs inline on the loop).
End to end, against a real server: while exports of big lines are running, /healthz
still answers within a generous client timeout (the old code held the loop for the
whole of each page).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import event, text
from sqlalchemy.engine import make_url
from tests.conftest import AppClient
from tests.export.helpers import (
    BASE_MS,
    app_state_of,
    export,
    export_all,
    insert_lines,
    on_event_loop,
)
from tests.factories import insert_key, make_account, make_tenant

from tidegate.db.engine import Database
from tidegate.export import service
from tidegate.logs import read_queries
from tidegate.logs.filtering import LineFilter
from tidegate.logs.reading import PageAbandoned, SqliteReader
from tidegate.logs.store import NewLine

# SQLite only (the test below): the copies have no search index entries, which an
# unfiltered export does not need.
_DOUBLE = text(
    "INSERT INTO log_lines (account_id, ts, received_ms, host, meta, line, size_bytes, "
    "host_folded) SELECT account_id, ts + 1000, received_ms, host, meta, line, size_bytes, "
    "host_folded FROM log_lines WHERE account_id = :account_id"
)


async def test_page_work_runs_in_a_worker_thread(
    client: AppClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    account = await make_account(client, await make_tenant(client.database_url))
    await insert_lines(
        client.database_url,
        account.account_id,
        [
            NewLine(line=f"line {i}", ts=BASE_MS + i, host="h", meta={"n": i}, tags=["t"])
            for i in range(30)
        ],
    )
    calls: list[tuple[str, bool]] = []
    record, matches = service.export_record, LineFilter.matches

    def spy_record(*args: Any, **kwargs: Any) -> Any:
        calls.append(("record", on_event_loop()))
        return record(*args, **kwargs)

    def spy_matches(self: LineFilter, **kwargs: Any) -> bool:
        calls.append(("matches", on_event_loop()))
        return matches(self, **kwargs)

    monkeypatch.setattr(service, "export_record", spy_record)
    monkeypatch.setattr(LineFilter, "matches", spy_matches)

    statements: list[str] = []
    read_engine = app_state_of(client).db.read_engine.sync_engine

    def seen(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(statement)

    event.listen(read_engine, "before_cursor_execute", seen)
    try:
        plain, _pages = await export_all(client, account.headers, size=7, prefer="head")
        filtered, _pages = await export_all(client, account.headers, size=7, query="line")
    finally:
        event.remove(read_engine, "before_cursor_execute", seen)

    assert [item["_line"] for item in plain] == [f"line {i}" for i in range(30)]
    assert plain[3]["_meta"] == {"n": 3}
    assert plain[3]["_tag"] == ["t"]
    assert len(filtered) == 30
    assert {name for name, _ in calls} == {"record", "matches"}
    assert not [call for call in calls if call[1]], "page work ran on the event loop"
    if client.database_url.startswith("sqlite"):
        # The read engine runs SQLite inline on the loop: the export must not use it.
        # (The app's alert evaluator reads the store's newest id on its own schedule;
        # the export's statements are the ones about this account.)
        assert not [text for text in statements if "log_lines.account_id" in text]


async def test_health_answers_while_big_pages_are_exported(
    client: AppClient, live_server_factory: Any
) -> None:
    """Exports whose pages take seconds of CPU (big lines with big meta objects, a
    query that must look at all of them: a comparison in ``meta``, which SQL leaves to
    the matcher); meanwhile /healthz, with a 5 s timeout."""
    if client.database_url.startswith("postgresql"):
        pytest.skip("one backend is enough for the loop; the structure test covers both")
    server = live_server_factory(
        env={
            "TIDEGATE_DATABASE_URL": client.database_url,
            "TIDEGATE_BOOTSTRAP": "0",
            "TIDEGATE_RATE_LIMIT_PER_MINUTE": "0",
        }
    )
    account = await make_account(client, await make_tenant(client.database_url))
    key = await insert_key(client.database_url, kind="service", account_id=account.account_id)
    headers = {"Authorization": f"Token {key}"}
    big_meta = {f"k{n}": {"v": n, "s": "x" * 8} for n in range(20_000)}
    await insert_lines(
        client.database_url,
        account.account_id,
        [NewLine(line="y" * 1_000_000, ts=BASE_MS + i, host="h", meta=big_meta) for i in range(5)],
    )
    # Doubled in SQL three times (40 lines), cheaper than encoding each in Python.
    db = Database.connect(client.database_url)
    try:
        for _ in range(3):
            async with db.write_sessions() as session:
                await session.execute(_DOUBLE, {"account_id": account.account_id})
                await session.commit()
    finally:
        await db.dispose()

    async with server.async_client(timeout=120) as http:
        exports = [
            asyncio.create_task(export(http, headers, size=10_000, query="k1.v:>99999"))
            for _ in range(4)
        ]
        try:
            await asyncio.sleep(0.5)  # the exports are under way
            for _ in range(3):
                health = await http.get("/healthz", timeout=15)  # generous: see docs/testing.md
                assert health.status_code == 200
            assert not all(task.done() for task in exports), "the exports were too quick to tell"
        finally:
            for task in exports:
                task.cancel()
            await asyncio.gather(*exports, return_exceptions=True)


async def test_an_abandoned_page_stops_at_its_next_query(client: AppClient) -> None:
    """A client that goes away stops its page (the thread would otherwise read on)."""
    if not client.database_url.startswith("sqlite"):
        pytest.skip("the SQLite reader; PostgreSQL's stops the same way on the loop")
    reader = SqliteReader(make_url(client.database_url).database or "")
    try:
        assert reader.scalar(read_queries.newest_line_id(account_id="nobody")) is None
        reader.stop()
        with pytest.raises(PageAbandoned):
            reader.scalar(read_queries.newest_line_id(account_id="nobody"))
    finally:
        reader.close()

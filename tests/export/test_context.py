"""``GET /v1/export/context``: the lines just before and after a line from the same host
and app, in the export's (ts, id) order, on both backends; account and group scope;
every mistake a 400 in the legacy shape; each side one range of an index."""

from __future__ import annotations

import itertools
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import make_url
from tests.conftest import AppClient
from tests.export.helpers import BASE_MS, export_all, insert_lines
from tests.factories import AccountCtx, insert_key, make_account, make_tenant
from tests.users.factories import person_in_group

from tidegate.db.engine import Database
from tidegate.export.context import AROUND
from tidegate.logs import read_queries
from tidegate.logs.store import NewLine


async def _account(client: AppClient) -> tuple[AccountCtx, dict[str, str]]:
    account = await make_account(client, await make_tenant(client.database_url))
    key = await insert_key(client.database_url, kind="service", account_id=account.account_id)
    return account, {"Authorization": f"Token {key}"}


async def _ids(client: AppClient, headers: dict[str, str]) -> dict[str, str]:
    """Each stored line's text -> its ``_id`` (texts are unique in these tests)."""
    lines, _pages = await export_all(client, headers, prefer="head")
    return {line["_line"]: line["_id"] for line in lines}


def _texts(records: list[dict[str, Any]]) -> list[str]:
    return [record["_line"] for record in records]


async def _context(
    client: AppClient, headers: dict[str, str], line_id: str, **params: Any
) -> dict[str, Any]:
    response = await client.get(
        "/v1/export/context", params={"line": line_id, **params}, headers=headers
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_the_lines_around_a_line_from_the_same_host_and_app(client: AppClient) -> None:
    account, headers = await _account(client)
    # web-1/api: a line every second, two sharing a time (ordered by id), and lines of
    # other hosts, apps (another case of the host's name too) and of no app in between.
    lines = [
        NewLine(line=f"api {i:02d}", ts=BASE_MS + i * 1000, host="web-1", app="api")
        for i in range(30)
    ]
    lines.insert(16, NewLine(line="api 15b", ts=BASE_MS + 15_000, host="web-1", app="api"))
    lines += [
        NewLine(line="other host", ts=BASE_MS + 14_500, host="web-2", app="api"),
        NewLine(line="other case host", ts=BASE_MS + 15_500, host="WEB-1", app="api"),
        NewLine(line="other app", ts=BASE_MS + 15_200, host="web-1", app="cron"),
        NewLine(line="no app", ts=BASE_MS + 15_300, host="web-1"),
        NewLine(line="no app 2", ts=BASE_MS + 17_300, host="web-1"),
    ]  # fmt: skip
    await insert_lines(client.database_url, account.account_id, lines)
    ids = await _ids(client, headers)

    body = await _context(client, headers, ids["api 15"], before=3, after=2)
    assert body["line"]["_line"] == "api 15"
    assert body["line"]["_id"] == ids["api 15"]
    assert _texts(body["before"]) == ["api 12", "api 13", "api 14"]
    assert _texts(body["after"]) == ["api 15b", "api 16"]
    assert body["more_before"] is True
    assert body["more_after"] is True

    # By default 20 each side; at the ends, what there is, and no more.
    body = await _context(client, headers, ids["api 02"])
    assert _texts(body["before"]) == ["api 00", "api 01"]
    assert body["more_before"] is False
    assert _texts(body["after"]) == [f"api {i:02d}" for i in range(3, 16)] + ["api 15b"] + [
        f"api {i:02d}" for i in range(16, 22)
    ]
    assert body["more_after"] is True
    body = await _context(client, headers, ids["api 29"], before=0, after=5)
    assert body["before"] == []
    assert body["after"] == []
    assert body["more_after"] is False

    # A line without an app: its neighbours are the host's other lines without one.
    body = await _context(client, headers, ids["no app"])
    assert _texts(body["before"]) == []
    assert _texts(body["after"]) == ["no app 2"]
    # The records are the export's (fields, meta).
    assert body["line"]["_host"] == "web-1"
    assert "_app" not in body["line"]


async def test_the_lines_around_a_line_from_its_host_or_the_whole_account(
    client: AppClient,
) -> None:
    account, headers = await _account(client)
    other, _other_headers = await _account(client)
    await insert_lines(
        client.database_url,
        account.account_id,
        [
            NewLine(line="a1 web", ts=BASE_MS + 1_000, host="web-1", app="api"),
            NewLine(line="a2 cron", ts=BASE_MS + 2_000, host="web-1", app="cron"),
            NewLine(line="a3 db", ts=BASE_MS + 3_000, host="db-1", app="api"),
            NewLine(line="a4 hit", ts=BASE_MS + 4_000, host="web-1", app="api"),
            NewLine(line="a5 no app", ts=BASE_MS + 5_000, host="web-1"),
            NewLine(line="a6 db", ts=BASE_MS + 6_000, host="db-1", app="api"),
            NewLine(line="a7 web", ts=BASE_MS + 7_000, host="web-1", app="api"),
        ],
    )
    await insert_lines(
        client.database_url,
        other.account_id,
        [NewLine(line="someone else's", ts=BASE_MS + 4_500, host="web-1", app="api")],
    )
    ids = await _ids(client, headers)
    hit = ids["a4 hit"]
    for around, before, after in (
        (None, ["a1 web"], ["a7 web"]),
        ("source", ["a1 web"], ["a7 web"]),
        ("host", ["a1 web", "a2 cron"], ["a5 no app", "a7 web"]),
        ("account", ["a1 web", "a2 cron", "a3 db"], ["a5 no app", "a6 db", "a7 web"]),
        ("ACCOUNT", ["a1 web", "a2 cron", "a3 db"], ["a5 no app", "a6 db", "a7 web"]),
    ):
        params = {} if around is None else {"around": around}
        body = await _context(client, headers, hit, **params)
        assert (_texts(body["before"]), _texts(body["after"])) == (before, after), around
    # Bounded as ever: the nearest first, and more said to be there.
    body = await _context(client, headers, hit, around="account", before=1, after=1)
    assert (_texts(body["before"]), _texts(body["after"])) == (["a3 db"], ["a5 no app"])
    assert (body["more_before"], body["more_after"]) == (True, True)


async def test_another_accounts_line_is_not_found_and_mistakes_are_400s(
    client: AppClient,
) -> None:
    owner, owner_headers = await _account(client)
    _other, other_headers = await _account(client)
    await insert_lines(
        client.database_url,
        owner.account_id,
        [NewLine(line="mine", ts=BASE_MS, host="h", app="a")],
    )
    line_id = (await _ids(client, owner_headers))["mine"]
    assert (await _context(client, owner_headers, line_id))["line"]["_line"] == "mine"

    theirs = await client.get("/v1/export/context", params={"line": line_id}, headers=other_headers)
    assert theirs.status_code == 404, theirs.text
    assert theirs.json()["status"] == "error"
    missing = await client.get(
        "/v1/export/context", params={"line": str(int(line_id) + 10_000)}, headers=owner_headers
    )
    assert missing.status_code == 404

    for params, named in (
        ({}, "line:"),
        ({"line": "abc"}, "line:"),
        ({"line": "0"}, "line:"),
        ({"line": "-3"}, "line:"),
        ({"line": "١٢"}, "line:"),  # digits, but not ASCII ones
        ({"line": str(2**63)}, "line:"),
        ({"line": line_id, "before": "101"}, "before:"),
        ({"line": line_id, "after": "-1"}, "after:"),
        ({"line": line_id, "after": "x"}, "after:"),
        ({"line": line_id, "around": "app"}, "around:"),
    ):
        answer = await client.get("/v1/export/context", params=params, headers=owner_headers)
        assert answer.status_code == 400, (params, answer.text)
        assert answer.json()["error"].startswith(named), answer.text
        assert answer.json()["status"] == "error"
    unauthenticated = await client.get("/v1/export/context", params={"line": line_id})
    assert unauthenticated.status_code == 401


async def test_a_person_in_a_group_sees_the_context_within_their_scope(
    client: AppClient,
) -> None:
    account, headers = await _account(client)
    await insert_lines(
        client.database_url,
        account.account_id,
        [
            NewLine(line=f"{'card' if i % 3 == 0 else 'step'} {i}", ts=BASE_MS + i, host="h", app="shop")
            for i in range(12)
        ],
    )  # fmt: skip
    ids = await _ids(client, headers)
    # A scope the SQL form may not decide alone (a query): lines are confirmed.
    browser = await person_in_group(
        client,
        account_id=account.account_id,
        headers=account.headers,
        group={"name": "no cards", "query": "-card"},
    )

    body = await _context(client, browser.headers, ids["step 5"], before=3, after=3)
    assert _texts(body["before"]) == ["step 1", "step 2", "step 4"]
    assert _texts(body["after"]) == ["step 7", "step 8", "step 10"]
    assert body["more_before"] is False
    assert body["more_after"] is True
    hidden = await client.get(
        "/v1/export/context", params={"line": ids["card 6"]}, headers=browser.headers
    )
    assert hidden.status_code == 404, hidden.text
    # The account's key sees them all.
    body = await _context(client, headers, ids["step 5"], before=2, after=2)
    assert _texts(body["before"]) == ["card 3", "step 4"]
    assert _texts(body["after"]) == ["card 6", "step 7"]


async def test_each_side_is_one_range_of_an_index_in_order(client: AppClient) -> None:
    """The statement of each side reads an index led by (account, host or app) in (ts,
    id) order: no table scan, no sort, on either backend."""
    account, _headers = await _account(client)
    await insert_lines(
        client.database_url,
        account.account_id,
        [NewLine(line=f"l {i}", ts=BASE_MS + i, host="h", app="a") for i in range(50)],
    )
    database = Database.connect(client.database_url)
    backend = make_url(client.database_url).get_backend_name()
    try:
        for newest_first, around in itertools.product((True, False), AROUND):
            statement = read_queries.neighbours(
                account_id=account.account_id,
                host="h",
                host_folded="h",
                app="a",
                app_folded="a",
                after=(BASE_MS + 25, 10**12),
                newest_first=newest_first,
                limit=20,
                around=around,
            )
            async with database.write_sessions() as session:
                connection = await session.connection()
                compiled = statement.compile(
                    dialect=connection.dialect, compile_kwargs={"literal_binds": True}
                )
                if backend == "sqlite":
                    rows = await session.execute(text(f"EXPLAIN QUERY PLAN {compiled}"))
                    plan = " | ".join(str(row[-1]) for row in rows)
                    assert "USING INDEX ix_log_lines_account_" in plan, plan
                    assert "TEMP B-TREE" not in plan, plan
                else:
                    # A table this small is cheaper to scan; the question is whether an
                    # index serves the order, so scans are priced out.
                    await session.execute(text("SET LOCAL enable_seqscan = off"))
                    rows = await session.execute(text(f"EXPLAIN {compiled}"))
                    plan = " | ".join(str(row[0]) for row in rows)
                    # (The lines are partitioned by day: each partition's copy of the
                    # index, merged in order.)
                    assert "Index Scan" in plan, plan
                    if around == "account":
                        assert "account_id_ts_id" in plan or "account_ts" in plan, plan
                    else:
                        assert "host_folded_ts_id" in plan or "app_folded_ts_id" in plan, plan
                    assert "Sort  (" not in plan, plan
                    assert "Seq Scan" not in plan, plan
    finally:
        await database.dispose()

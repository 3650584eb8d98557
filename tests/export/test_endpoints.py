"""GET /v2/export on both backends: parameters, order, filters, paging and cursors."""

from __future__ import annotations

from typing import Any

import pytest
from tests.conftest import AppClient
from tests.export.helpers import BASE_MS, export, export_all, insert_lines
from tests.factories import AccountCtx, insert_key, make_account, make_tenant

from tidegate.export import service
from tidegate.logs.store import NewLine


async def _account(client: AppClient) -> AccountCtx:
    return await make_account(client, await make_tenant(client.database_url))


def _lines(
    count: int, *, start_ms: int = BASE_MS, step_ms: int = 1000, **fields: Any
) -> list[NewLine]:
    return [
        NewLine(line=f"line {i}", ts=start_ms + i * step_ms, host="web-1", **fields)
        for i in range(count)
    ]


def _texts(lines: list[dict[str, Any]]) -> list[str]:
    return [item["_line"] for item in lines]


async def test_first_page_head_and_tail_order_and_record_shape(client: AppClient) -> None:
    account = await _account(client)
    await insert_lines(
        client.database_url,
        account.account_id,
        [
            NewLine(
                line="first",
                ts=BASE_MS,
                host="web-1",
                app="api",
                level="INFO",
                env="prod",
                file="/var/log/api.log",
                ip="10.0.0.1",
                mac="aa:bb",
                tags=["a", "b"],
                meta={"user": {"id": 7}},
            ),
            NewLine(line="second", ts=BASE_MS + 1000, host="web-2"),
            # Same ts as "first": (ts, id) order puts it after "first".
            NewLine(line="third", ts=BASE_MS, host="web-3"),
        ],
    )
    head = await export(client, account.headers, prefer="head")
    assert head.status_code == 200, head.text
    body = head.json()
    assert body["pagination_id"] is None
    assert _texts(body["lines"]) == ["first", "third", "second"]
    first = body["lines"][0]
    assert first == {
        "_id": first["_id"],
        "_ts": BASE_MS,
        "_host": "web-1",
        "_app": "api",
        "level": "INFO",
        "_env": "prod",
        "_file": "/var/log/api.log",
        "_ip": "10.0.0.1",
        "_mac": "aa:bb",
        "_tag": ["a", "b"],
        "_meta": {"user": {"id": 7}},
        "_line": "first",
    }
    assert isinstance(first["_id"], str)
    assert body["lines"][2] == {
        "_id": body["lines"][2]["_id"],
        "_ts": BASE_MS + 1000,
        "_host": "web-2",
        "_line": "second",
    }

    tail = (await export(client, account.headers, prefer="tail")).json()
    assert _texts(tail["lines"]) == ["second", "third", "first"]
    default = (await export(client, account.headers)).json()
    assert _texts(default["lines"]) == ["second", "third", "first"]


async def test_empty_account_answers_no_lines_and_no_cursor(client: AppClient) -> None:
    account = await _account(client)
    response = await export(client, account.headers)
    assert response.status_code == 200
    assert response.json() == {"lines": [], "pagination_id": None}


async def test_from_and_to_in_seconds_or_milliseconds(client: AppClient) -> None:
    account = await _account(client)
    await insert_lines(
        client.database_url,
        account.account_id,
        [
            NewLine(line="before", ts=BASE_MS - 1, host="h"),
            NewLine(line="start", ts=BASE_MS, host="h"),
            NewLine(line="in the last second", ts=BASE_MS + 10_999, host="h"),
            NewLine(line="after", ts=BASE_MS + 11_000, host="h"),
        ],
    )
    seconds = BASE_MS // 1000
    by_seconds = await export(
        client, account.headers, prefer="head", **{"from": seconds, "to": seconds + 10}
    )
    assert _texts(by_seconds.json()["lines"]) == ["start", "in the last second"]
    by_ms = await export(
        client, account.headers, prefer="head", **{"from": BASE_MS, "to": BASE_MS + 10_999}
    )
    assert _texts(by_ms.json()["lines"]) == ["start", "in the last second"]
    mixed = await export(
        client, account.headers, prefer="head", **{"from": BASE_MS - 1, "to": seconds}
    )
    assert _texts(mixed.json()["lines"]) == ["before", "start"]


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"from": None}, "from: required"),
        ({"to": None}, "to: required"),
        ({"from": "yesterday"}, "from: must be epoch seconds or milliseconds, or an ISO"),
        ({"to": "-5"}, "to: must not be negative"),
        ({"from": 2_000_000, "to": 1_000_000}, "from: must not be after to"),
        ({"to": 10**16}, "to: out of range"),
        ({"size": 0}, "size: must be an integer from 1 to 10000"),
        ({"size": 10_001}, "size: must be an integer from 1 to 10000"),
        ({"size": "ten"}, "size: must be an integer from 1 to 10000"),
        ({"prefer": "middle"}, "prefer: must be head or tail"),
        ({"pagination_id": "not-a-cursor"}, "pagination_id: not a valid pagination id"),
        ({"hosts": ",".join(f"h{i}" for i in range(101))}, "hosts: at most 100 values"),
    ],
)
async def test_bad_parameters_are_400_in_the_legacy_shape(
    client: AppClient, params: dict[str, Any], fragment: str
) -> None:
    account = await _account(client)
    response = await export(client, account.headers, **params)
    assert response.status_code == 400, response.text
    body = response.json()
    assert set(body) == {"error", "code", "status"}
    assert body["status"] == "error"
    assert fragment in body["error"]


async def test_a_query_that_does_not_parse_names_the_column(client: AppClient) -> None:
    account = await _account(client)
    response = await export(client, account.headers, query="app:(a OR")
    assert response.status_code == 400
    body = response.json()
    assert body["error"].startswith("query: ")
    assert "column" in body["error"]
    assert body["status"] == "error"


async def test_size_bounds_and_default(client: AppClient) -> None:
    account = await _account(client)
    await insert_lines(client.database_url, account.account_id, _lines(12))
    one = (await export(client, account.headers, size=1, prefer="head")).json()
    assert _texts(one["lines"]) == ["line 0"]
    assert one["pagination_id"] is not None
    most = (await export(client, account.headers, size=10_000)).json()
    assert len(most["lines"]) == 12
    assert most["pagination_id"] is None
    default = (await export(client, account.headers)).json()
    assert len(default["lines"]) == 12


async def test_hosts_apps_levels_filters_are_case_insensitive_lists(client: AppClient) -> None:
    account = await _account(client)
    await insert_lines(
        client.database_url,
        account.account_id,
        [
            NewLine(line="a", ts=BASE_MS, host="Web-1", app="api", level="INFO"),
            NewLine(line="b", ts=BASE_MS + 1, host="web-2", app="worker", level="error"),
            NewLine(line="c", ts=BASE_MS + 2, host="db-1", app="api", level="WARN"),
            NewLine(line="d", ts=BASE_MS + 3, host="db-1"),
        ],
    )
    headers = account.headers

    async def texts(**params: Any) -> list[str]:
        response = await export(client, headers, prefer="head", **params)
        assert response.status_code == 200, response.text
        return _texts(response.json()["lines"])

    assert await texts(hosts="web-1,WEB-2") == ["a", "b"]
    assert await texts(hosts="web-1, db-1 ,") == ["a", "c", "d"]
    assert await texts(apps="API") == ["a", "c"]
    assert await texts(levels="error,warn") == ["b", "c"]
    assert await texts(hosts="db-1", apps="api") == ["c"]
    assert await texts(hosts="nowhere") == []
    assert await texts(hosts="") == ["a", "b", "c", "d"]


async def test_query_uses_the_platform_search_syntax(client: AppClient) -> None:
    account = await _account(client)
    await insert_lines(
        client.database_url,
        account.account_id,
        [
            NewLine(line="GET /health 200", ts=BASE_MS, host="web", app="api", level="INFO"),
            NewLine(
                line="upstream timed out",
                ts=BASE_MS + 1,
                host="web",
                app="api",
                level="ERROR",
                meta={"response": 504},
            ),
            NewLine(
                line="disk full",
                ts=BASE_MS + 2,
                host="db",
                app="postgres",
                level="error",
                meta={"response": 200},
            ),
        ],
    )

    async def texts(query: str) -> list[str]:
        response = await export(client, account.headers, prefer="head", query=query)
        assert response.status_code == 200, response.text
        return _texts(response.json()["lines"])

    assert await texts("level:error") == ["upstream timed out", "disk full"]
    assert await texts("level:error -app:postgres") == ["upstream timed out"]
    assert await texts('"timed out" OR disk') == ["upstream timed out", "disk full"]
    assert await texts("response:>=500") == ["upstream timed out"]
    assert await texts("GET") == ["GET /health 200"]
    assert await texts("nothing-matches-this") == []


async def test_paging_returns_every_line_once_while_lines_arrive(client: AppClient) -> None:
    original = _lines(25)
    for prefer in ("head", "tail"):
        account = await _account(client)
        await insert_lines(client.database_url, account.account_id, original)
        seen: list[str] = []
        cursor: str | None = None
        page = 0
        while True:
            response = await export(
                client, account.headers, size=4, prefer=prefer, pagination_id=cursor
            )
            assert response.status_code == 200, response.text
            body = response.json()
            seen.extend(_texts(body["lines"]))
            cursor = body["pagination_id"]
            if cursor is None:
                break
            page += 1
            # New lines everywhere in the range (before, inside and after what is paged):
            # none of them belongs to this export.
            await insert_lines(
                client.database_url,
                account.account_id,
                [
                    NewLine(line=f"late {prefer} {page} {offset}", ts=BASE_MS + offset, host="h")
                    for offset in (-500, 0, 12_000, 12_500, 30_000)
                ],
            )
        expected = [item.line for item in original]
        assert seen == (expected if prefer == "head" else expected[::-1])


async def test_size_may_change_between_pages(client: AppClient) -> None:
    account = await _account(client)
    await insert_lines(client.database_url, account.account_id, _lines(10))
    first = (await export(client, account.headers, size=3, prefer="head")).json()
    second = (
        await export(
            client, account.headers, size=5, prefer="head", pagination_id=first["pagination_id"]
        )
    ).json()
    assert _texts(first["lines"] + second["lines"]) == [f"line {i}" for i in range(8)]


async def test_a_cursor_is_bound_to_its_account_and_parameters(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    account = await make_account(client, tenant)
    other = await make_account(client, tenant)
    await insert_lines(client.database_url, account.account_id, _lines(5))
    await insert_lines(client.database_url, other.account_id, _lines(5))
    first = (await export(client, account.headers, size=2, hosts="web-1")).json()
    cursor = first["pagination_id"]
    assert cursor is not None

    foreign = await export(client, other.headers, size=2, hosts="web-1", pagination_id=cursor)
    assert foreign.status_code == 400
    assert "another export" in foreign.json()["error"]
    for changed in (
        {"hosts": "web-2"},
        {"hosts": "web-1", "prefer": "head"},
        {"hosts": "web-1", "query": "line"},
        {"hosts": "web-1", "from": BASE_MS // 1000 - 7200},
        {"hosts": "web-1", "levels": "info"},
    ):
        response = await export(client, account.headers, size=2, pagination_id=cursor, **changed)
        assert response.status_code == 400, changed
        assert response.json()["status"] == "error"
    # The same parameters in another order and unit still fit.
    same = await export(
        client,
        account.headers,
        size=2,
        hosts="WEB-1,",
        pagination_id=cursor,
        **{"from": (BASE_MS // 1000 - 3600) * 1000},
    )
    assert same.status_code == 200, same.text


async def test_a_tampered_cursor_is_refused(client: AppClient) -> None:
    account = await _account(client)
    await insert_lines(client.database_url, account.account_id, _lines(5))
    cursor = (await export(client, account.headers, size=2)).json()["pagination_id"]
    assert cursor is not None
    flipped = cursor[:20] + ("A" if cursor[20] != "A" else "B") + cursor[21:]
    for bad in (flipped, cursor[:-4], cursor + "x", "x" * 5000):
        response = await export(client, account.headers, size=2, pagination_id=bad)
        assert response.status_code == 400
        assert "pagination_id" in response.json()["error"]


async def test_another_accounts_lines_never_appear(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    mine = await make_account(client, tenant)
    theirs = await make_account(client, tenant)
    await insert_lines(client.database_url, theirs.account_id, _lines(30))
    await insert_lines(client.database_url, mine.account_id, _lines(3, start_ms=BASE_MS + 500))
    lines, _ = await export_all(client, mine.headers, size=2)
    assert len(lines) == 3
    assert {item["_ts"] for item in lines} == {BASE_MS + 500, BASE_MS + 1500, BASE_MS + 2500}
    # An enterprise key without delegation has no account to export.
    response = await export(client, mine.tenant.headers)
    assert response.status_code in (400, 403)


async def test_service_key_of_the_account_exports(client: AppClient) -> None:
    account = await _account(client)
    key = await insert_key(client.database_url, kind="service", account_id=account.account_id)
    await insert_lines(client.database_url, account.account_id, _lines(2))
    response = await export(client, {"Authorization": f"Token {key}"})
    assert response.status_code == 200, response.text
    assert len(response.json()["lines"]) == 2
    assert (await export(client, {})).status_code == 401


async def test_a_scan_stops_at_the_cap_and_continues(
    client: AppClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(service, "MAX_SCANNED_PER_REQUEST", 40)
    account = await _account(client)
    lines = _lines(150, file="/var/log/app")
    lines[120] = NewLine(line="needle", ts=lines[120].ts, host="web-1", file="/var/log/NEEDLE")
    await insert_lines(client.database_url, account.account_id, lines)
    # A query SQL cannot narrow (``file`` has no case-folded copy): every line is a
    # candidate for the matcher to confirm.
    query = "file:/var/log/needle"
    first = (await export(client, account.headers, query=query, prefer="head")).json()
    # 40 rows scanned, nothing found: an empty page that is not the last.
    assert first["lines"] == []
    assert first["pagination_id"] is not None
    found, pages = await export_all(client, account.headers, query=query, prefer="head")
    assert _texts(found) == ["needle"]
    assert pages == 4  # 40 + 40 + 40 + the rest


@pytest.mark.parametrize("prefer", ["head", "tail"])
async def test_a_page_reads_candidates_the_matcher_turns_down_in_several_chunks(
    client: AppClient, prefer: str
) -> None:
    """Every other line is a candidate the matcher turns down ("xneedle" holds the text,
    not at a word start): on PostgreSQL a page of 5 reads 6 candidates, then as many as
    it read so far, each statement after the last row read."""
    account = await _account(client)
    lines = [
        NewLine(line=f"{'x' if i % 2 else ''}needle {i}", ts=BASE_MS + i, host="h")
        for i in range(40)
    ]
    await insert_lines(client.database_url, account.account_id, lines)
    first = (await export(client, account.headers, query="needle", size=5, prefer=prefer)).json()
    wanted = [f"needle {i}" for i in range(0, 40, 2)]
    if prefer == "tail":
        wanted.reverse()
    assert _texts(first["lines"]) == wanted[:5]
    found, _ = await export_all(client, account.headers, query="needle", size=5, prefer=prefer)
    assert _texts(found) == wanted


async def test_filtered_pages_are_filled_across_chunks(client: AppClient) -> None:
    account = await _account(client)
    lines = [
        NewLine(line=f"{'even' if i % 2 == 0 else 'odd'} {i}", ts=BASE_MS + i, host="h")
        for i in range(700)
    ]
    await insert_lines(client.database_url, account.account_id, lines)
    page = (await export(client, account.headers, query="odd", size=300, prefer="head")).json()
    assert len(page["lines"]) == 300
    assert page["lines"][-1]["_line"] == "odd 599"
    rest = (
        await export(
            client,
            account.headers,
            query="odd",
            size=300,
            prefer="head",
            pagination_id=page["pagination_id"],
        )
    ).json()
    assert _texts(rest["lines"]) == [f"odd {i}" for i in range(601, 700, 2)]
    assert rest["pagination_id"] is None


async def test_lines_through_ingestion_are_exported(client: AppClient) -> None:
    account = await _account(client)
    key = await insert_key(client.database_url, kind="ingestion", account_id=account.account_id)
    response = await client.post(
        "/logs/ingest",
        params={"hostname": "ingest-host"},
        headers={"apikey": key},
        json={
            "lines": [
                {"line": "from ingestion", "app": "svc", "level": "WARN", "timestamp": BASE_MS},
                {"line": "second", "app": "svc", "timestamp": BASE_MS + 1},
            ]
        },
    )
    assert response.status_code == 200, response.text
    lines, _ = await export_all(client, account.headers, prefer="head", apps="svc")
    assert _texts(lines) == ["from ingestion", "second"]
    assert lines[0]["_host"] == "ingest-host"
    assert lines[0]["level"] == "WARN"


async def test_a_page_stops_at_its_byte_bound_and_continues(
    client: AppClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page stops before its lines pass MAX_PAGE_BYTES (a line bigger than that still
    gets a page of its own), with a pagination_id; every line comes exactly once, with or
    without a filter, exact in SQL or confirmed by the matcher."""
    monkeypatch.setattr(service, "MAX_PAGE_BYTES", 2_000)
    account = await _account(client)
    lines = [
        NewLine(line=f"n{i:02d} " + "x" * 600, ts=BASE_MS + i, host="h", app=("api", "web")[i % 2])
        for i in range(20)
    ]
    lines[7] = NewLine(line="n07 " + "y" * 5_000, ts=BASE_MS + 7, host="h", app="web")
    await insert_lines(client.database_url, account.account_id, lines)
    for params, selected in (
        ({}, range(20)),
        ({"apps": "WEB"}, range(1, 20, 2)),  # exact in SQL
        ({"query": "n0"}, range(10)),  # confirmed by the matcher
    ):
        pages: list[list[str]] = []
        cursor: str | None = None
        while True:
            response = await export(
                client, account.headers, size=100, prefer="head", pagination_id=cursor, **params
            )
            assert response.status_code == 200, response.text
            body = response.json()
            pages.append([item["_line"][:3] for item in body["lines"]])
            cursor = body["pagination_id"]
            if cursor is None:
                break
        assert [name for page in pages for name in page] == [f"n{i:02d}" for i in selected]
        # About 800 characters a line: two fit, a third would pass 2,000.
        assert all(len(page) <= 2 for page in pages), pages
        assert ["n07"] in pages
        assert len(pages) >= len(selected) // 2

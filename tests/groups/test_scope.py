"""A group's access scope limits the lines its members see, by every reading path:
export, aggregate and live tail; combined with the request's own filter in the query."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests.conftest import AppClient
from tests.export.helpers import BASE_MS, export_all, insert_lines
from tests.factories import AccountCtx, insert_key, make_account, make_tenant
from tests.tail.test_live import _env, ingest, tail
from tests.users.factories import add_person, sign_in, sign_in_person

from tidegate.auth.scope import AccessScope, GroupScope, scoped_query
from tidegate.logs.store import NewLine
from tidegate.search import compile_query

LINES = [
    NewLine(line="web one", ts=BASE_MS + 1, host="h1", app="web", level="info"),
    NewLine(line="api one", ts=BASE_MS + 2, host="h2", app="api", level="info"),
    NewLine(line="web elsewhere", ts=BASE_MS + 3, host="h3", app="web", level="info"),
    NewLine(line="api broke", ts=BASE_MS + 4, host="h2", app="api", level="error"),
    NewLine(line="odd app", ts=BASE_MS + 5, host="h1", app='we"b\\x', level="info"),
]


async def _group(client: AppClient, account: AccountCtx, **body: Any) -> str:
    response = await client.post("/v1/config/groups", json=body, headers=account.headers)
    assert response.status_code == 200, response.text
    return str(response.json()["id"])


async def _member(
    client: AppClient, account: AccountCtx, role: str, groups: list[str]
) -> dict[str, str]:
    person = await add_person(client.database_url, account_id=account.account_id, role=role)
    if groups:
        changed = await client.put(
            f"/v1/config/members/{person.email}", json={"groups": groups}, headers=account.headers
        )
        assert changed.status_code == 200, changed.text
    return (await sign_in_person(client, person)).headers


async def _seen(client: AppClient, headers: dict[str, str], **params: Any) -> list[str]:
    lines, _pages = await export_all(client, headers, size=2, **params)
    return sorted(line["_line"] for line in lines)


async def _counted(client: AppClient, headers: dict[str, str], **params: Any) -> int:
    response = await client.get(
        "/v1/aggregate",
        params={"from": BASE_MS - 1000, "to": BASE_MS + 1000, **params},
        headers=headers,
    )
    assert response.status_code == 200, response.text
    return int(response.json()["total"])


async def test_scoped_members_see_only_their_groups_lines_in_export_and_aggregate(
    client: AppClient,
) -> None:
    account = await make_account(client, await make_tenant(client.database_url))
    await insert_lines(client.database_url, account.account_id, LINES)
    web_h1 = await _group(client, account, name="web on h1", apps=["WEB"], hosts=["h1"])
    errors = await _group(client, account, name="errors", query="level:error")
    odd = await _group(client, account, name="odd", apps=['we"b\\x'])
    everything = await _group(client, account, name="no limit")

    only_web = await _member(client, account, "readonly", [web_h1])
    web_or_errors = await _member(client, account, "member", [web_h1, errors])
    odd_only = await _member(client, account, "member", [odd])
    no_groups = await _member(client, account, "readonly", [])
    unlimited = await _member(client, account, "readonly", [web_h1, everything])
    admin_in_group = await _member(client, account, "admin", [errors])

    assert await _seen(client, only_web) == ["web one"]
    assert await _seen(client, web_or_errors) == ["api broke", "web one"]
    assert await _seen(client, odd_only) == ["odd app"]
    assert len(await _seen(client, no_groups)) == len(LINES)
    assert len(await _seen(client, unlimited)) == len(LINES)
    assert await _seen(client, admin_in_group) == ["api broke"]
    # The request's own filter narrows further; it never widens the scope.
    assert await _seen(client, only_web, query="api") == []
    assert await _seen(client, only_web, apps="api") == []
    assert await _seen(client, web_or_errors, query="broke OR one") == ["api broke", "web one"]
    assert await _seen(client, web_or_errors, hosts="h2") == ["api broke"]
    # A syntax error in the request's query is reported at its own column.
    bad = await client.get(
        "/v2/export", params={"from": 0, "to": 1, "query": "a OR"}, headers=only_web
    )
    assert bad.status_code == 400
    assert "column" in bad.json()["error"]

    assert await _counted(client, only_web) == 1
    assert await _counted(client, web_or_errors) == 2
    assert await _counted(client, no_groups) == len(LINES)

    # Changing the group changes what its members see at their next request.
    widened = await client.patch(
        f"/v1/config/groups/{web_h1}", json={"hosts": []}, headers=account.headers
    )
    assert widened.status_code == 200
    assert await _seen(client, only_web) == ["web elsewhere", "web one"]
    assert (
        await client.delete(f"/v1/config/groups/{web_h1}", headers=account.headers)
    ).status_code == 200
    assert len(await _seen(client, only_web)) == len(LINES)


async def test_group_queries_must_parse(client: AppClient) -> None:
    account = await make_account(client, await make_tenant(client.database_url))
    response = await client.post(
        "/v1/config/groups", json={"name": "x", "query": "a OR"}, headers=account.headers
    )
    assert response.status_code == 400
    assert response.json()["error"].startswith("query:")


@pytest.mark.parametrize(
    ("scope", "line", "app", "host", "seen"),
    [
        (GroupScope(apps=("web",)), "x", "WEB", "h", True),
        (GroupScope(apps=("web",)), "x", "webby", "h", False),
        (GroupScope(hosts=("h1", "h2")), "x", "a", "h2", True),
        (GroupScope(apps=("a",), query="-secret"), "a secret", "a", "h", False),
        (GroupScope(apps=('a") OR (app:"b',)), "x", "b", "h", False),
    ],
)
def test_a_scope_is_a_query_that_cannot_be_escaped(
    scope: GroupScope, line: str, app: str, host: str, seen: bool
) -> None:
    from tidegate.search import LogLine

    text = scoped_query(None, AccessScope((scope,)))
    assert text is not None
    assert compile_query(text).matches(LogLine(line, app=app, host=host)) is seen


async def test_scoped_members_tail_only_their_lines(
    client: AppClient, shared_live_server: Any
) -> None:
    account = await make_account(client, await make_tenant(client.database_url))
    key = await insert_key(client.database_url, kind="ingestion", account_id=account.account_id)
    web = await _group(client, account, name="web", apps=["web"])
    person = await add_person(client.database_url, account_id=account.account_id, role="readonly")
    await client.put(
        f"/v1/config/members/{person.email}", json={"groups": [web]}, headers=account.headers
    )
    server = shared_live_server(env=_env(client))
    async with server.async_client() as http:
        browser = await sign_in(http, {"email": person.email, "password": person.password})
    async with tail(server.base_url, browser.cookies_only) as stream:
        await ingest(server.base_url, key, [{"line": "from api", "app": "api"}])
        await ingest(server.base_url, key, [{"line": "from web", "app": "web"}])
        lines = await stream.wait_for(1)
        await asyncio.sleep(0.5)
        assert [line["_line"] for line in stream.lines()] == ["from web"]
        assert lines[0]["_app"] == "web"

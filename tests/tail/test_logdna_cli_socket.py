"""``logdna-cli tail`` with its own credentials, against a real server: ``POST /login``
(Basic e-mail:password) gives the token; ``tail`` then opens
``/ws/tail?<querystring.stringify({email, id, ts, hmac, q, hosts, apps, levels, tags})>``
(index.js, lib/utils.js ``authParams``) and prints the ``p`` lines of ``{e, p}`` frames."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from typing import Any
from urllib.parse import parse_qsl, quote

from tests.conftest import AppClient
from tests.factories import insert_key, make_account, make_tenant
from tests.live import live_async_client
from tests.tail.test_live import _env, ingest
from tests.tail.test_socket import _refused, tail_socket
from tests.users.factories import add_person, sign_in

# Node's querystring.escape leaves these unescaped besides letters and digits.
_NODE_SAFE = "-_.!~*'()"


def node_querystring(pairs: list[tuple[str, str]]) -> str:
    return "&".join(f"{quote(k, safe=_NODE_SAFE)}={quote(v, safe=_NODE_SAFE)}" for k, v in pairs)


def tail_query(email: str, account_id: str, token: str, **filters: str) -> str:
    """The CLI's tail query string: the signed {email, id, ts} and its hmac, then q and
    the lists it was given."""
    signed = [("email", email), ("id", account_id), ("ts", str(int(time.time() * 1000)))]
    digest = hmac.new(token.encode(), node_querystring(signed).encode(), hashlib.sha256)
    return node_querystring([*signed, ("hmac", digest.hexdigest()), *filters.items()])


async def _login(base_url: str, email: str, password: str) -> dict[str, Any]:
    basic = base64.b64encode(f"{email}:{password}".encode()).decode()
    async with live_async_client(base_url) as http:
        answer = await http.post(
            "/login",
            content=b"{}",
            headers={"authorization": f"Basic {basic}", "content-type": "application/json"},
        )
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


async def test_logdna_cli_tail_signs_in_and_sees_its_groups_lines(
    client: AppClient, shared_live_server: Any
) -> None:
    account = await make_account(client, await make_tenant(client.database_url))
    key = await insert_key(client.database_url, kind="ingestion", account_id=account.account_id)
    group = await client.post(
        "/v1/config/groups", json={"name": "web", "apps": ["web"]}, headers=account.headers
    )
    assert group.status_code == 200, group.text
    person = await add_person(client.database_url, account_id=account.account_id, role="readonly")
    placed = await client.put(
        f"/v1/config/members/{person.email}",
        json={"groups": [group.json()["id"]]},
        headers=account.headers,
    )
    assert placed.status_code == 200, placed.text
    server = shared_live_server(env=_env(client))
    login = await _login(server.base_url, person.email, person.password)
    account_id = login["accounts"][0]
    assert account_id == account.account_id

    query = tail_query(person.email, account_id, login["token"], q="", levels="error,info")
    url = server.base_url.replace("http://", "ws://") + "/ws/tail?" + query
    async with tail_socket(url.split("/ws/tail?")[0], _parsed(query)) as stream:
        await ingest(
            server.base_url,
            key,
            [
                {"line": "from api", "app": "api", "level": "error"},
                {"line": "web debug", "app": "web", "level": "debug"},
                {"line": "from web", "app": "web", "level": "error"},
            ],
        )
        (line,) = await stream.wait_for(1)
        assert (line["_host"], line["_app"], line["level"], line["_line"]) == (
            "h",
            "web",
            "error",
            "from web",
        )

    # A signature is good once: the same URL again is refused (logdna-cli exits on
    # "401" and asks its user to log in again).
    status, body = await _refused(url)
    assert status == 401, body
    # A wrong token's signature, and no signature at all.
    status, _body = await _refused(
        server.base_url.replace("http://", "ws://")
        + "/ws/tail?"
        + tail_query(person.email, account_id, "not-the-token")
    )
    assert status == 401


async def test_a_browser_session_cookie_is_not_a_socket_credential(
    client: AppClient, shared_live_server: Any
) -> None:
    """Browsers send cookies with a WebSocket handshake started by any site: the socket
    does not take them (the web app tails over SSE, which checks them as every request)."""
    account = await make_account(client, await make_tenant(client.database_url))
    person = await add_person(client.database_url, account_id=account.account_id, role="owner")
    server = shared_live_server(env=_env(client))
    async with server.async_client() as http:
        browser = await sign_in(http, {"email": person.email, "password": person.password})
        # The same cookie is good for SSE...
        async with http.stream("GET", "/v1/tail", headers=browser.cookies_only) as sse:
            assert sse.status_code == 200
    # ...not for the WebSocket.
    status, _body = await _refused(
        server.base_url.replace("http://", "ws://") + "/ws/tail?q=", browser.cookies_only
    )
    assert status == 401


def _parsed(query: str) -> list[tuple[str, str]]:
    """The query string as pairs (tail_socket encodes them again; the server checks the
    signature over the decoded values)."""
    return parse_qsl(query, keep_blank_values=True)

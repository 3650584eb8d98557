"""logdna-cli's exact HTTP exchange, replayed against a real server.

What the CLI (github.com/logdna/logdna-cli, lib/utils.js and index.js) sends:
- ``login``: ``POST /login``, HTTP Basic ``email:password``, JSON body ``{}``; it keeps
  ``token``, ``accounts[0]`` (as ``id``), ``keys[0]`` and ``servicekeys[0]`` if any.
- then every call carries ``email``, ``id``, ``ts`` (``Date.now()``) and ``hmac``: the
  hex HMAC-SHA256, under the token, of Node's ``querystring.stringify({email, id, ts})``;
  the request library (``qs``) writes the query itself.
- ``info``: ``GET /info`` with just that query; ``switch``: ``GET /orgs``;
- ``search``: ``GET /v1/export`` after deleting the e-mail from its config, so the
  signed text reads ``email=&id=...`` and the query has no ``email``, plus
  ``q, from, to, size, prefer, hosts, apps, levels, tags, json``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
import uuid
from typing import Any
from urllib.parse import quote

from tests.conftest import AppClient
from tests.factories import insert_key, make_account, make_tenant
from tests.live import live_async_client
from tests.tail.test_live import _env
from tests.users.factories import add_person

from tidegate.auth.signed_query import signed_text

USER_AGENT = "logdna-cli/2.0.0"


def _rfc3986(value: str) -> str:
    # What the `qs` library writes in the URL (RFC 3986 unreserved kept).
    return quote(value, safe="-._~")


def signed_query(email: str | None, account_id: str, token: str, ts: int) -> dict[str, str]:
    """authParams() of the CLI: the hmac over Node's querystring of {email, id, ts}
    (an undefined e-mail is written ``email=``)."""
    node_text = "&".join(
        [
            "email=" + (quote(email, safe="-_.!~*'()") if email else ""),
            "id=" + quote(account_id, safe="-_.!~*'()"),
            f"ts={ts}",
        ]
    )
    signature = hmac.new(token.encode(), node_text.encode(), hashlib.sha256).hexdigest()
    params = {"id": account_id, "ts": str(ts), "hmac": signature}
    return {"email": email, **params} if email else params


def url(base: str, path: str, params: dict[str, Any]) -> str:
    query = "&".join(f"{_rfc3986(k)}={_rfc3986(str(v))}" for k, v in params.items())
    return f"{base}/{path}?{query}"


def test_the_signed_text_is_nodes_querystring() -> None:
    # querystring.stringify({email: "a.b+c@example.com", id: "x y", ts: 1}) in Node 20.
    assert (
        signed_text(email="a.b+c@example.com", account_id="x y", ts="1")
        == "email=a.b%2Bc%40example.com&id=x%20y&ts=1"
    )
    assert signed_text(email="", account_id="abc", ts="17") == "email=&id=abc&ts=17"
    assert signed_text(email="o'neil!(x)*~@e.io", account_id="a", ts="2").startswith(
        "email=o'neil!(x)*~%40e.io&"
    )


async def test_login_info_orgs_and_a_signed_search_against_a_real_server(
    client: AppClient, shared_live_server: Any
) -> None:
    tenant = await make_tenant(client.database_url)
    first = await make_account(client, tenant, company="First Co")
    second = await make_account(client, tenant, company="Second Co")
    person = await add_person(client.database_url, account_id=first.account_id, role="member")
    await add_person(
        client.database_url, account_id=second.account_id, role="readonly", email=person.email
    )
    server = shared_live_server(env=_env(client))
    base = server.base_url
    headers = {"content-type": "application/json", "user-agent": USER_AGENT}

    async with live_async_client() as http:
        basic = base64.b64encode(f"{person.email}:{person.password}".encode()).decode()
        login = await http.post(
            f"{base}/login", content=b"{}", headers={**headers, "authorization": f"Basic {basic}"}
        )
        assert login.status_code == 200, login.text
        body = login.json()
        assert body["accounts"] == [first.account_id, second.account_id]
        token = body["token"]
        assert len(token) >= 32
        # The CLI keeps keys[0] and servicekeys[0] only when there are any.
        assert body["servicekeys"] == []
        assert body["keys"] == []
        config = {"email": person.email, "account": body["accounts"][0], "token": token}

        wrong = base64.b64encode(f"{person.email}:nope-nope".encode()).decode()
        refused = await http.post(
            f"{base}/login", content=b"{}", headers={**headers, "authorization": f"Basic {wrong}"}
        )
        assert refused.status_code == 401
        assert "error" in refused.json()  # the CLI prints body.error

        last_ts = [0]

        def signed(path: str, email: str | None, **params: Any) -> str:
            # The signature covers only (email, id, ts): two calls in one millisecond
            # would carry the same one, and the second would be refused as a replay.
            ts = max(int(time.time() * 1000), last_ts[0] + 1)
            last_ts[0] = ts
            query = signed_query(email, config["account"], config["token"], ts)
            return url(base, path, {**query, **params})

        info = await http.get(signed("info", config["email"]), headers=headers)
        assert info.status_code == 200, info.text
        assert info.json()["email"] == person.email
        assert info.json()["account_id"] == first.account_id
        assert info.json()["role"] == "member"

        orgs = await http.get(signed("orgs", config["email"]), headers=headers)
        assert orgs.status_code == 200, orgs.text
        assert [(o["id"], o["name"]) for o in orgs.json()] == [
            (first.account_id, "First Co"),
            (second.account_id, "Second Co"),
        ]
        assert all(o["servicekeys"] == [] for o in orgs.json())

        # search: the e-mail deleted from the config before signing; NDJSON back.
        key = await insert_key(client.database_url, kind="ingestion", account_id=first.account_id)
        now = int(time.time() * 1000)
        ingested = await http.post(
            f"{base}/logs/ingest",
            params={"hostname": "cli-host", "now": now},
            headers={"apikey": key},
            json={"lines": [{"line": "hello from the cli test", "app": "demo", "timestamp": now}]},
        )
        assert ingested.status_code == 200, ingested.text
        search = await http.get(
            signed(
                "v1/export",
                None,
                q="hello",
                **{"from": now - 60_000, "to": now + 60_000, "size": 10, "prefer": "tail"},
            ),
            headers=headers,
        )
        assert search.status_code == 200, search.text
        assert [json.loads(line)["_line"] for line in search.text.splitlines()] == [
            "hello from the cli test"
        ]
        as_json = await http.get(
            signed("v1/export", None, q="", json="true", levels="error"), headers=headers
        )
        assert as_json.status_code == 200, as_json.text
        assert as_json.json() == []

        # Replayed: refused. A stale ts, a wrong token, a foreign account: refused.
        replay_url = signed("info", config["email"])
        assert (await http.get(replay_url, headers=headers)).status_code == 200
        assert (await http.get(replay_url, headers=headers)).status_code == 401
        stale = signed_query(person.email, first.account_id, token, now - 3_600_000)
        assert (await http.get(url(base, "info", stale), headers=headers)).status_code == 401
        forged = signed_query(person.email, first.account_id, "0" * 40, int(time.time() * 1000))
        assert (await http.get(url(base, "info", forged), headers=headers)).status_code == 401
        other = await make_account(client, tenant)
        foreign = signed_query(person.email, other.account_id, token, int(time.time() * 1000))
        assert (await http.get(url(base, "info", foreign), headers=headers)).status_code == 403

        # Acting in the second account (``logdna switch``): its role there applies.
        config["account"] = second.account_id
        as_readonly = await http.get(signed("info", config["email"]), headers=headers)
        assert as_readonly.json()["role"] == "readonly"
        board = await http.post(
            signed("v1/config/board", config["email"]), json={"title": "x"}, headers=headers
        )
        assert board.status_code == 403

        # One token per user: logging in again (another machine) gives the same.
        login_again = await http.post(
            f"{base}/login", content=b"{}", headers={**headers, "authorization": f"Basic {basic}"}
        )
        assert login_again.json()["token"] == token


async def test_v3_auth_account_for_any_credential(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    account = await make_account(client, tenant)
    other = await make_account(client, tenant)
    for headers in (account.headers, tenant.as_account(account.account_id)):
        response = await client.get("/v3/auth/account", headers=headers)
        assert response.status_code == 200, response.text
        ids = [a["account_id"] for a in response.json()["data"]]
        assert account.account_id in ids
        assert response.headers["x-auth-account-short-id"] == account.data["account"]
        one = await client.get(f"/v3/auth/account/{account.data['account']}", headers=headers)
        assert one.status_code == 200
        assert one.json()["data"]["account_id"] == account.account_id
    # A person sees their accounts only.
    person = await add_person(client.database_url, account_id=account.account_id, role="readonly")
    from tests.users.factories import sign_in_person

    browser = await sign_in_person(client, person)
    listed = (await client.get("/v3/auth/account", headers=browser.cookies_only)).json()["data"]
    assert [a["account_id"] for a in listed] == [account.account_id]
    missing = await client.get(
        f"/v3/auth/account/{other.data['account']}", headers=browser.cookies_only
    )
    assert missing.status_code == 404
    assert missing.json()["code"] == "ENOTFOUND"


async def test_v3_auth_account_lists_a_persons_accounts_as_the_enterprise_reads_them(
    client: AppClient,
) -> None:
    """A person in accounts of two enterprises, two of them owned by one person: each in
    the order joined, as its enterprise's own read of it answers (the owner's short ids
    in that enterprise included), from one read of the accounts."""
    first, second = await make_tenant(client.database_url), await make_tenant(client.database_url)
    owner = f"owner-{uuid.uuid4().hex[:6]}@example.com"
    one = await make_account(client, first, owneremail=owner)
    two = await make_account(client, first, owneremail=owner)
    three = await make_account(client, second)
    person = await add_person(client.database_url, account_id=three.account_id, role="admin")
    for account in (one, two):
        await add_person(
            client.database_url, account_id=account.account_id, role="member", email=person.email
        )
    from tests.users.factories import sign_in_person

    browser = await sign_in_person(client, person)
    listed = await client.get("/v3/auth/account", headers=browser.cookies_only)
    assert listed.status_code == 200, listed.text
    expected = []
    for account in (three, one, two):
        read = await client.get(
            f"/v3/enterprise/account/{account.account_id}", headers=account.tenant.headers
        )
        expected.append(read.json()["data"])
    assert listed.json()["data"] == expected
    assert sorted(expected[1]["owner"]["accounts"]) == sorted(
        [one.data["account"], two.data["account"]]
    )
    for account, document in zip((three, one, two), expected, strict=True):
        got = await client.get(
            f"/v3/auth/account/{account.data['account']}", headers=browser.cookies_only
        )
        assert got.json()["data"] == document

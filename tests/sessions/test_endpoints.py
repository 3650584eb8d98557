"""Browser sessions: sign-in with a password or a key, cookies, CSRF, switching
accounts, expiry and revocation."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import update
from tests.conftest import AppClient, make_settings, open_client
from tests.factories import make_account, make_tenant
from tests.keys.factories import create_key, with_service_key
from tests.sessions.test_signin_limits import hold_clock
from tests.users.factories import Browser, Person, add_person, sign_in, sign_in_person

from tidegate.db.engine import Database
from tidegate.models import UserSession


async def test_password_sign_in_sets_secure_cookies_and_answers_the_accounts(
    client: AppClient,
) -> None:
    tenant = await make_tenant(client.database_url)
    first = await make_account(client, tenant, company="First")
    second = await make_account(client, tenant, company="Second")
    person = await add_person(client.database_url, account_id=first.account_id, role="admin")
    await add_person(
        client.database_url, account_id=second.account_id, role="readonly", email=person.email
    )

    response = await client.post(
        "/v1/auth/session", json={"email": person.email.upper(), "password": person.password}
    )
    client.cookies.clear()
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["account_id"] == first.account_id
    assert body["role"] == "admin"
    assert body["accounts"] == [
        {"id": first.account_id, "name": "First", "role": "admin"},
        {"id": second.account_id, "name": "Second", "role": "readonly"},
    ]
    cookies = {c.split("=", 1)[0]: c for c in response.headers.get_list("set-cookie")}
    session_cookie = cookies["tidegate_session"].lower()
    assert "httponly" in session_cookie
    assert "samesite=lax" in session_cookie
    assert "path=/" in session_cookie
    assert "secure" not in session_cookie  # public_url is http in tests
    assert "httponly" not in cookies["tidegate_csrf"].lower()
    assert f"tidegate_csrf={body['csrf_token']};" in cookies["tidegate_csrf"]


async def _signed_in_person(client: AppClient) -> tuple[Person, Browser]:
    account = await make_account(client, await make_tenant(client.database_url))
    person = await add_person(client.database_url, account_id=account.account_id)
    return person, await sign_in_person(client, person)


async def test_the_cookie_value_is_not_stored(client: AppClient) -> None:
    person, browser = await _signed_in_person(client)
    db = Database.connect(client.database_url)
    try:
        async with db.read_sessions() as session:
            from sqlalchemy import select

            rows = (
                await session.execute(
                    select(UserSession).where(UserSession.user_id == person.user_id)
                )
            ).scalars()
            stored = [(row.token_hash, row.csrf_hash) for row in rows]
    finally:
        await db.dispose()
    assert len(stored) == 1
    assert browser.session not in stored[0]
    assert browser.csrf not in stored[0]


@pytest.mark.parametrize(
    "body",
    [
        {"email": "nobody@example.com", "password": "whatever-long"},
        {"key": "sta_" + "0" * 40},
    ],
)
async def test_wrong_credentials_are_401(client: AppClient, body: dict[str, str]) -> None:
    response = await client.post("/v1/auth/session", json=body)
    assert response.status_code == 401
    assert response.json()["code"] == "Unauthorized"
    assert "set-cookie" not in response.headers


async def test_wrong_password_is_401_and_bad_bodies_are_400(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    account = await make_account(client, tenant)
    person = await add_person(client.database_url, account_id=account.account_id)
    wrong = await client.post(
        "/v1/auth/session", json={"email": person.email, "password": "not the password"}
    )
    assert wrong.status_code == 401
    for body in ({}, {"email": person.email}, {"email": person.email, "key": "x", "password": "y"}):
        response = await client.post("/v1/auth/session", json=body)
        assert response.status_code == 400, body


async def test_cookie_authenticates_reads_and_csrf_guards_writes(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    account = await make_account(client, tenant)
    person = await add_person(client.database_url, account_id=account.account_id, role="member")
    browser = await sign_in_person(client, person)

    boards = await client.get("/v1/config/board", headers=browser.cookies_only)
    assert boards.status_code == 200, boards.text
    # A write with the cookie but no CSRF header: what a cross-site form would send.
    forged = await client.post(
        "/v1/config/board", json={"title": "x"}, headers=browser.cookies_only
    )
    assert forged.status_code == 403
    wrong = await client.post(
        "/v1/config/board",
        json={"title": "x"},
        headers={**browser.cookies_only, "X-CSRF-Token": _another_token(browser.csrf)},
    )
    assert wrong.status_code == 403
    # The header must match the session's token, not just any cookie the attacker sets.
    planted = Browser(session=browser.session, csrf="attacker-chosen", info={})
    assert (
        await client.post("/v1/config/board", json={"title": "x"}, headers=planted.headers)
    ).status_code == 403
    made = await client.post("/v1/config/board", json={"title": "x"}, headers=browser.headers)
    assert made.status_code == 200, made.text


async def test_whoami_switch_account_and_sign_out(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    first = await make_account(client, tenant)
    second = await make_account(client, tenant)
    other = await make_account(client, tenant)
    person = await add_person(client.database_url, account_id=first.account_id, role="owner")
    await add_person(
        client.database_url, account_id=second.account_id, role="member", email=person.email
    )
    browser = await sign_in_person(client, person)

    me = (await client.get("/v1/auth/session", headers=browser.cookies_only)).json()
    assert me["kind"] == "user"
    assert me["email"] == person.email
    assert (me["account_id"], me["role"]) == (first.account_id, "owner")

    switch = await client.put(
        "/v1/auth/session/account",
        json={"account_id": second.account_id},
        headers=browser.headers,
    )
    assert switch.status_code == 200, switch.text
    assert (switch.json()["account_id"], switch.json()["role"]) == (second.account_id, "member")
    me = (await client.get("/v1/auth/session", headers=browser.cookies_only)).json()
    assert me["account_id"] == second.account_id
    # Not one of the user's accounts: refused, the session stays where it was.
    refused = await client.put(
        "/v1/auth/session/account", json={"account_id": other.account_id}, headers=browser.headers
    )
    assert refused.status_code == 403
    no_csrf = await client.put(
        "/v1/auth/session/account",
        json={"account_id": first.account_id},
        headers=browser.cookies_only,
    )
    assert no_csrf.status_code == 403

    out = await client.delete("/v1/auth/session", headers=browser.headers)
    assert out.status_code == 200
    assert (await client.get("/v1/auth/session", headers=browser.cookies_only)).status_code == 401
    assert (await client.get("/v1/config/board", headers=browser.cookies_only)).status_code == 401


async def test_key_sessions_act_as_owner_and_end_with_the_key(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    account = await with_service_key(client, await make_account(client, tenant))
    second = await make_account(client, tenant)
    key = await create_key(client, account, type_="service")

    by_service = await sign_in(client, {"key": key["key"]})
    assert by_service.info["account_id"] == account.account_id
    assert by_service.info["role"] == "owner"
    assert (await client.get("/v1/config/keys", headers=by_service.cookies_only)).status_code == 200

    by_enterprise = await sign_in(client, {"key": tenant.token, "account_id": second.account_id})
    assert by_enterprise.info["account_id"] == second.account_id
    assert {a["id"] for a in by_enterprise.info["accounts"]} >= {  # type: ignore[union-attr]
        account.account_id,
        second.account_id,
    }
    me = (await client.get("/v1/auth/session", headers=by_enterprise.cookies_only)).json()
    assert me["kind"] == "enterprise"
    switched = await client.put(
        "/v1/auth/session/account",
        json={"account_id": account.account_id},
        headers=by_enterprise.headers,
    )
    assert switched.status_code == 200, switched.text

    deleted = await client.delete(f"/v1/config/keys/{key['id']}", headers=account.headers)
    assert deleted.status_code == 200
    assert (
        await client.get("/v1/config/board", headers=by_service.cookies_only)
    ).status_code == 401

    foreign = await make_account(client, await make_tenant(client.database_url))
    refused = await client.post(
        "/v1/auth/session", json={"key": tenant.token, "account_id": foreign.account_id}
    )
    client.cookies.clear()
    assert refused.status_code == 403


async def test_removed_users_lose_their_sessions(client: AppClient) -> None:
    person, browser = await _signed_in_person(client)
    db = Database.connect(client.database_url)
    try:
        async with db.write_sessions() as session:
            from tidegate.models import User

            await session.delete(await session.get(User, person.user_id))
            await session.commit()
    finally:
        await db.dispose()
    assert (await client.get("/v1/config/board", headers=browser.cookies_only)).status_code == 401


async def _age_session(database_url: str, user_id: str, **values: int) -> None:
    db = Database.connect(database_url)
    try:
        async with db.write_sessions() as session:
            await session.execute(
                update(UserSession).where(UserSession.user_id == user_id).values(**values)
            )
            await session.commit()
    finally:
        await db.dispose()


async def test_sessions_expire_when_idle_and_at_their_absolute_end(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    account = await make_account(client, tenant)
    now = int(time.time() * 1000)
    idle_ms = int(client.settings.session_idle_s * 1000)

    idle = await add_person(client.database_url, account_id=account.account_id)
    idle_browser = await sign_in_person(client, idle)
    await _age_session(client.database_url, idle.user_id, last_seen_ms=now - idle_ms - 1000)
    assert (
        await client.get("/v1/config/board", headers=idle_browser.cookies_only)
    ).status_code == 401

    old = await add_person(client.database_url, account_id=account.account_id)
    old_browser = await sign_in_person(client, old)
    await _age_session(client.database_url, old.user_id, expires_ms=now - 1)
    assert (
        await client.get("/v1/config/board", headers=old_browser.cookies_only)
    ).status_code == 401

    active = await add_person(client.database_url, account_id=account.account_id)
    active_browser = await sign_in_person(client, active)
    # Active just under the idle limit: still signed in, and the activity is recorded.
    await _age_session(client.database_url, active.user_id, last_seen_ms=now - idle_ms + 60_000)
    assert (
        await client.get("/v1/config/board", headers=active_browser.cookies_only)
    ).status_code == 200
    await _age_session(client.database_url, active.user_id, created_ms=now)
    assert (
        await client.get("/v1/config/board", headers=active_browser.cookies_only)
    ).status_code == 200


async def test_failed_sign_ins_are_limited_per_email_and_address(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # Per (e-mail, address) and per address; across addresses: tests/sessions/test_signin_limits.py.
    settings = make_settings(
        database_url,
        tmp_path_factory.mktemp("signin"),
        signin_max_failures=3,
        signin_address_max_failures=3,
    )
    http, lifespan = await open_client(settings)
    try:
        # The address's delay after its 3rd failure is 1 s: held, it cannot run out
        # before the last request on a slow machine.
        hold_clock(http)
        tenant = await make_tenant(database_url)
        account = await make_account(http, tenant)
        person = await add_person(database_url, account_id=account.account_id)
        for _ in range(3):
            wrong = await http.post(
                "/v1/auth/session", json={"email": person.email, "password": "wrong password"}
            )
            assert wrong.status_code == 401
        # Blocked now, even with the right password.
        blocked = await http.post(
            "/v1/auth/session", json={"email": person.email, "password": person.password}
        )
        assert blocked.status_code == 429
        assert "retry-after" in blocked.headers
        # The address is blocked too (3 failures from it).
        other = await add_person(database_url, account_id=account.account_id)
        assert (
            await http.post(
                "/v1/auth/session", json={"email": other.email, "password": other.password}
            )
        ).status_code == 429
    finally:
        http.cookies.clear()
        await http.aclose()
        await lifespan.__aexit__(None, None, None)


async def test_https_public_url_marks_cookies_secure(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    settings = make_settings(
        database_url, tmp_path_factory.mktemp("https"), public_url="https://logs.example.com"
    )
    http, lifespan = await open_client(settings)
    try:
        tenant = await make_tenant(database_url)
        account = await make_account(http, tenant)
        person = await add_person(database_url, account_id=account.account_id)
        response = await http.post(
            "/v1/auth/session", json={"email": person.email, "password": person.password}
        )
        http.cookies.clear()
        assert response.status_code == 200
        for cookie in response.headers.get_list("set-cookie"):
            assert "secure" in cookie.lower(), cookie
    finally:
        await http.aclose()
        await lifespan.__aexit__(None, None, None)


def _another_token(token: str) -> str:
    """The token with its last character changed (to one it surely is not: a fixed
    replacement equals the original once in 64 tokens)."""
    return token[:-1] + ("B" if token.endswith("A") else "A")

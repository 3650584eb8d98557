"""The members API, invitations e-mailed through a real SMTP server, accepting them,
and password resets."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from email.message import Message
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from tests.conftest import AppClient, make_settings, open_client
from tests.factories import make_account, make_tenant
from tests.users.factories import add_person, sign_in_person
from tests.users.smtp import Inbox, smtp_server

__all__ = ["smtp_server"]


@pytest.fixture
async def mailing_client(
    database_url: str,
    tmp_path_factory: pytest.TempPathFactory,
    smtp_server: tuple[Inbox, int],
) -> AsyncIterator[tuple[AppClient, Inbox]]:
    inbox, port = smtp_server
    settings = make_settings(
        database_url,
        tmp_path_factory.mktemp("mail"),
        smtp_host="127.0.0.1",
        smtp_port=port,
        smtp_from="tidegate@test.example",
        public_url="https://logs.test.example/",
    )
    http, lifespan = await open_client(settings)
    try:
        yield http, inbox
    finally:
        await http.aclose()
        await lifespan.__aexit__(None, None, None)


def _token(link: str) -> str:
    return parse_qs(urlparse(link).query)["token"][0]


def _link_in(message: Message) -> str:
    payload = message.get_payload(decode=True)
    assert isinstance(payload, bytes)
    body = payload.decode()
    found = re.search(r"https://\S+", body)
    assert found is not None, body
    return found.group(0)


async def test_inviting_a_new_email_mails_a_link_that_sets_the_password(
    mailing_client: tuple[AppClient, Inbox],
) -> None:
    client, inbox = mailing_client
    tenant = await make_tenant(client.database_url)
    account = await make_account(client, tenant, company="Acme Logs")
    email = f"new-{account.account_id}@example.com"

    created = await client.post(
        "/v1/config/members",
        json={"email": email.upper(), "role": "member", "groups": []},
        headers=account.headers,
    )
    assert created.status_code == 200, created.text
    body = created.json()
    assert (body["email"], body["role"], body["groups"], body["pending"]) == (
        email,
        "member",
        [],
        True,
    )
    link = body["invitation"]["link"]
    assert body["invitation"]["emailed"] is True
    assert link.startswith("https://logs.test.example/accept-invitation?token=")
    mails = inbox.to(email)
    assert len(mails) == 1
    assert "Acme Logs" in mails[0]["Subject"]
    assert _link_in(mails[0]) == link

    # Before accepting: no password works.
    assert (
        await client.post("/v1/auth/session", json={"email": email, "password": "anything-long"})
    ).status_code == 401
    short = await client.post(
        "/v1/auth/invitation/accept", json={"token": _token(link), "password": "short"}
    )
    assert short.status_code == 400
    accepted = await client.post(
        "/v1/auth/invitation/accept",
        json={"token": _token(link), "password": "a long enough password"},
    )
    assert accepted.status_code == 200, accepted.text
    again = await client.post(
        "/v1/auth/invitation/accept",
        json={"token": _token(link), "password": "another long password"},
    )
    assert again.status_code == 400  # used once
    signed = await client.post(
        "/v1/auth/session", json={"email": email, "password": "a long enough password"}
    )
    client.cookies.clear()
    assert signed.status_code == 200
    assert signed.json()["role"] == "member"
    member = (await client.get(f"/v1/config/members/{email}", headers=account.headers)).json()
    assert member["pending"] is False


async def test_account_owner_is_the_first_member_and_is_invited(
    mailing_client: tuple[AppClient, Inbox],
) -> None:
    client, inbox = mailing_client
    tenant = await make_tenant(client.database_url)
    owner = f"owner-{tenant.enterprise_id}@example.com"
    account = await make_account(client, tenant, owneremail=owner)
    members = (await client.get("/v1/config/members", headers=account.headers)).json()
    assert [(m["email"], m["role"], m["pending"]) for m in members] == [(owner, "owner", True)]
    mails = inbox.to(owner)
    assert len(mails) == 1
    link = _link_in(mails[0])
    assert (
        await client.post(
            "/v1/auth/invitation/accept", json={"token": _token(link), "password": "owner password"}
        )
    ).status_code == 200
    signed = await client.post(
        "/v1/auth/session", json={"email": owner, "password": "owner password"}
    )
    client.cookies.clear()
    assert signed.json()["role"] == "owner"
    # A second account for the same e-mail (another enterprise even): the same user.
    other_tenant = await make_tenant(client.database_url)
    await make_account(client, other_tenant, owneremail=owner)
    assert len(inbox.to(owner)) == 1  # already has a password: no new invitation


async def test_password_reset_mails_a_link_and_ends_sessions(
    mailing_client: tuple[AppClient, Inbox],
) -> None:
    client, inbox = mailing_client
    tenant = await make_tenant(client.database_url)
    account = await make_account(client, tenant)
    person = await add_person(client.database_url, account_id=account.account_id)
    browser = await sign_in_person(client, person)

    unknown = await client.post("/v1/auth/password-reset", json={"email": "nobody@example.com"})
    assert unknown.status_code == 200
    assert inbox.to("nobody@example.com") == []
    asked = await client.post("/v1/auth/password-reset", json={"email": person.email})
    assert asked.status_code == 200
    assert asked.json() == unknown.json()
    link = _link_in(inbox.to(person.email)[-1])
    assert link.startswith("https://logs.test.example/reset-password?token=")
    done = await client.post(
        "/v1/auth/password-reset/confirm",
        json={"token": _token(link), "password": "the new password"},
    )
    assert done.status_code == 200, done.text
    assert (await client.get("/v1/config/board", headers=browser.cookies_only)).status_code == 401
    assert (
        await client.post(
            "/v1/auth/session", json={"email": person.email, "password": person.password}
        )
    ).status_code == 401
    new = await client.post(
        "/v1/auth/session", json={"email": person.email, "password": "the new password"}
    )
    client.cookies.clear()
    assert new.status_code == 200
    # A reset token is no invitation token and vice versa.
    assert (
        await client.post(
            "/v1/auth/invitation/accept",
            json={"token": _token(link), "password": "yet another one"},
        )
    ).status_code == 400


async def test_without_smtp_the_link_is_still_returned(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    account = await make_account(client, tenant)
    created = await client.post(
        "/v1/config/members",
        json={"email": f"x-{account.account_id}@example.com", "role": "readonly"},
        headers=account.headers,
    )
    assert created.status_code == 200
    assert created.json()["invitation"]["emailed"] is False
    assert "accept-invitation?token=" in created.json()["invitation"]["link"]


async def test_members_crud_groups_and_owner_rules(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    account = await make_account(client, tenant)
    h = account.headers
    group = (
        await client.post("/v1/config/groups", json={"name": "web", "apps": ["web"]}, headers=h)
    ).json()
    email = f"m-{account.account_id}@example.com"
    created = await client.post(
        "/v1/config/members",
        json={"email": email, "role": "member", "groups": [group["id"]]},
        headers=h,
    )
    assert created.json()["groups"] == [group["id"]]
    assert (
        await client.post("/v1/config/members", json={"email": email, "role": "member"}, headers=h)
    ).status_code == 409
    changed = await client.put(
        f"/v1/config/members/{email}", json={"role": "admin", "groups": []}, headers=h
    )
    assert changed.status_code == 200
    assert (changed.json()["role"], changed.json()["groups"]) == ("admin", [])
    assert (await client.get(f"/v1/config/members/{email}", headers=h)).json()["role"] == "admin"
    listed = (await client.get("/v1/config/members", headers=h)).json()
    assert email in [m["email"] for m in listed]
    # A foreign group id reads as a missing one.
    other = await make_account(client, await make_tenant(client.database_url))
    foreign = (
        await client.post("/v1/config/groups", json={"name": "x"}, headers=other.headers)
    ).json()
    assert (
        await client.put(f"/v1/config/members/{email}", json={"groups": [foreign["id"]]}, headers=h)
    ).status_code == 400
    # An admin may not make owners; the last owner stays.
    admin = await add_person(client.database_url, account_id=account.account_id, role="admin")
    admin_browser = await sign_in_person(client, admin)
    promoted = await client.put(
        f"/v1/config/members/{email}", json={"role": "owner"}, headers=admin_browser.headers
    )
    assert promoted.status_code == 403
    owner_email = account.data["owneremail"]
    assert (
        await client.put(f"/v1/config/members/{owner_email}", json={"role": "admin"}, headers=h)
    ).status_code == 409
    assert (await client.delete(f"/v1/config/members/{owner_email}", headers=h)).status_code == 409
    removed = await client.delete(f"/v1/config/members/{email}", headers=h)
    assert removed.status_code == 200
    assert (await client.get(f"/v1/config/members/{email}", headers=h)).status_code == 404
    # Another tenant's member reads as missing.
    assert (
        await client.get(f"/v1/config/members/{owner_email}", headers=other.headers)
    ).status_code == 404


async def test_only_an_owner_limits_an_owner_through_a_group(client: AppClient) -> None:
    """A group's scope limits what its members see: an admin cannot put an owner in one,
    take one out, or change or delete a group an owner is in (an owner can); an admin's
    own groups and other members' stay theirs to change."""
    tenant = await make_tenant(client.database_url)
    account = await make_account(client, tenant)
    h = account.headers  # a service key made by the enterprise: acts as owner
    groups = "/v1/config/groups"
    narrow = (await client.post(groups, json={"name": "web", "apps": ["web"]}, headers=h)).json()
    other = (await client.post(groups, json={"name": "api", "apps": ["api"]}, headers=h)).json()
    owner_email = account.data["owneremail"]
    admin = await add_person(client.database_url, account_id=account.account_id, role="admin")
    as_admin = (await sign_in_person(client, admin)).headers

    def owner_groups(headers: dict[str, str], ids: list[str]) -> Any:
        return client.put(
            f"/v1/config/members/{owner_email}", json={"groups": ids}, headers=headers
        )

    refused = await owner_groups(as_admin, [narrow["id"]])
    assert refused.status_code == 403, refused.text
    assert (await client.get(f"/v1/config/members/{owner_email}", headers=h)).json()["groups"] == []
    assert (await owner_groups(h, [narrow["id"]])).status_code == 200
    # The same groups again change nothing: allowed (a form saved as it was).
    assert (await owner_groups(as_admin, [narrow["id"]])).status_code == 200
    assert (await owner_groups(as_admin, [])).status_code == 403
    # The group the owner is in: its scope and its existence are the owner's to change.
    scoped = await client.patch(
        f"{groups}/{narrow['id']}", json={"apps": ["nothing"]}, headers=as_admin
    )
    assert scoped.status_code == 403, scoped.text
    renamed = await client.patch(
        f"{groups}/{narrow['id']}", json={"name": "web!"}, headers=as_admin
    )
    assert renamed.status_code == 200, renamed.text
    assert (await client.delete(f"{groups}/{narrow['id']}", headers=as_admin)).status_code == 403
    group = (await client.get(f"{groups}/{narrow['id']}", headers=h)).json()
    assert (group["apps"], group["members"]) == (["web"], [owner_email])
    # Groups without an owner, and the admin's own membership, stay the admin's.
    assert (
        await client.patch(f"{groups}/{other['id']}", json={"apps": ["x"]}, headers=as_admin)
    ).status_code == 200
    assert (
        await client.put(
            f"/v1/config/members/{admin.email}", json={"groups": [other["id"]]}, headers=as_admin
        )
    ).status_code == 200
    assert (await client.delete(f"{groups}/{other['id']}", headers=as_admin)).status_code == 200
    assert (
        await client.patch(f"{groups}/{narrow['id']}", json={"apps": []}, headers=h)
    ).status_code == 200
    assert (await client.delete(f"{groups}/{narrow['id']}", headers=h)).status_code == 200


async def test_password_reset_requests_are_limited_per_email(
    mailing_client: tuple[AppClient, Inbox],
) -> None:
    client, inbox = mailing_client
    tenant = await make_tenant(client.database_url)
    account = await make_account(client, tenant)
    person = await add_person(client.database_url, account_id=account.account_id)
    limit = client.settings.signin_max_failures
    for _ in range(limit + 3):
        asked = await client.post("/v1/auth/password-reset", json={"email": person.email})
        assert asked.status_code == 200
    assert len(inbox.to(person.email)) == limit

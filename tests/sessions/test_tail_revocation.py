"""A person's live tail ends when they are removed from the account or sign out (the
stream re-checks its credential, people included)."""

from __future__ import annotations

from tests.conftest import AppClient
from tests.factories import make_account, make_tenant
from tests.tail.test_revocation import _ended, _stream_in_process
from tests.users.factories import add_person, sign_in_person


async def test_removing_the_member_ends_their_stream(client: AppClient) -> None:
    account = await make_account(client, await make_tenant(client.database_url))
    person = await add_person(client.database_url, account_id=account.account_id)
    browser = await sign_in_person(client, person)
    task = await _stream_in_process(client, account.account_id, browser.cookies_only)
    removed = await client.delete(f"/v1/config/members/{person.email}", headers=account.headers)
    assert removed.status_code == 200, removed.text
    events = await _ended(task)
    assert events[-1][0] == "error"


async def test_signing_out_ends_the_stream(client: AppClient) -> None:
    account = await make_account(client, await make_tenant(client.database_url))
    person = await add_person(client.database_url, account_id=account.account_id)
    browser = await sign_in_person(client, person)
    task = await _stream_in_process(client, account.account_id, browser.cookies_only)
    out = await client.delete("/v1/auth/session", headers=browser.headers)
    assert out.status_code == 200
    events = await _ended(task)
    assert events[-1] == ("error", {"error": "The session has ended"})

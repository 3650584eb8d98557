"""A person's live tail ends when they are removed from the account, sign out, or their
groups' access scope changes; a key's when its maker leaves or is scoped (the stream
re-checks its credential, people and makers included)."""

from __future__ import annotations

from tests.conftest import AppClient
from tests.factories import AccountCtx, make_account, make_tenant
from tests.tail.test_revocation import _ended, _stream_in_process
from tests.users.factories import Person, add_person, sign_in_person

from tidegate.tail.repository import MAKER_LEFT, SCOPE_CHANGED


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


async def _web_group(client: AppClient, account: AccountCtx) -> str:
    made = await client.post(
        "/v1/config/groups", json={"name": "web only", "apps": ["web"]}, headers=account.headers
    )
    assert made.status_code == 200, made.text
    return str(made.json()["id"])


async def _place(client: AppClient, account: AccountCtx, person: Person, groups: list[str]) -> None:
    placed = await client.put(
        f"/v1/config/members/{person.email}", json={"groups": groups}, headers=account.headers
    )
    assert placed.status_code == 200, placed.text


async def test_narrowing_the_members_scope_ends_their_stream(client: AppClient) -> None:
    """A stream filters with the scope it opened with: a scope changed under it ends it
    (docs/isolation.md), so the reader reconnects within the new one."""
    account = await make_account(client, await make_tenant(client.database_url))
    group = await _web_group(client, account)
    person = await add_person(client.database_url, account_id=account.account_id, role="readonly")
    await _place(client, account, person, [group])
    browser = await sign_in_person(client, person)
    task = await _stream_in_process(client, account.account_id, browser.cookies_only)
    narrowed = await client.patch(
        f"/v1/config/groups/{group}", json={"apps": ["api"]}, headers=account.headers
    )
    assert narrowed.status_code == 200, narrowed.text
    assert (await _ended(task))[-1] == ("error", {"error": SCOPE_CHANGED})


async def test_placing_an_unrestricted_member_in_a_group_ends_their_stream(
    client: AppClient,
) -> None:
    account = await make_account(client, await make_tenant(client.database_url))
    group = await _web_group(client, account)
    person = await add_person(client.database_url, account_id=account.account_id, role="member")
    browser = await sign_in_person(client, person)
    task = await _stream_in_process(client, account.account_id, browser.cookies_only)
    await _place(client, account, person, [group])
    assert (await _ended(task))[-1] == ("error", {"error": SCOPE_CHANGED})


async def test_a_keys_stream_ends_when_its_maker_leaves_or_is_scoped(client: AppClient) -> None:
    """A key acts with its maker's role and scope (docs/isolation.md): its stream follows
    the maker as a request would."""
    account = await make_account(client, await make_tenant(client.database_url))
    group = await _web_group(client, account)
    streams = []
    for _ in range(2):
        admin = await add_person(client.database_url, account_id=account.account_id, role="admin")
        browser = await sign_in_person(client, admin)
        made = await client.post(
            "/v1/config/keys", params={"type": "service"}, headers=browser.headers
        )
        assert made.status_code == 200, made.text
        headers = {"Authorization": f"Token {made.json()['key']}"}
        streams.append((admin, await _stream_in_process(client, account.account_id, headers)))
    (leaving, left_stream), (scoped, scoped_stream) = streams
    removed = await client.delete(f"/v1/config/members/{leaving.email}", headers=account.headers)
    assert removed.status_code == 200, removed.text
    await _place(client, account, scoped, [group])
    assert (await _ended(left_stream))[-1] == ("error", {"error": MAKER_LEFT})
    assert (await _ended(scoped_stream))[-1] == ("error", {"error": SCOPE_CHANGED})

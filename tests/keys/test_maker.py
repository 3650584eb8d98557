"""A service key acts with at most the role and group scope of the person who made it
(docs/isolation.md): an admin's key cannot make an owner, a scoped member's key reads
only their scope, and the key of a maker who left the account acts as nobody."""

from __future__ import annotations

from tests.conftest import AppClient
from tests.export.helpers import BASE_MS, export_all, insert_lines
from tests.factories import make_account, make_tenant
from tests.users.factories import add_person, sign_in_person

from tidegate.logs.store import NewLine


async def _key_of(client: AppClient, headers: dict[str, str]) -> dict[str, str]:
    made = await client.post("/v1/config/keys", params={"type": "service"}, headers=headers)
    assert made.status_code == 200, made.text
    return {"Authorization": f"Token {made.json()['key']}"}


async def test_an_admins_key_cannot_make_an_owner(client: AppClient) -> None:
    account = await make_account(client, await make_tenant(client.database_url))
    admin = await add_person(client.database_url, account_id=account.account_id, role="admin")
    browser = await sign_in_person(client, admin)
    # Directly: refused (only an owner may make an owner).
    direct = await client.put(
        f"/v1/config/members/{admin.email}", json={"role": "owner"}, headers=browser.headers
    )
    assert direct.status_code == 403, direct.text
    # Through a key the admin makes: refused the same way (the escalation of issue 21).
    key = await _key_of(client, browser.headers)
    through_key = await client.put(
        f"/v1/config/members/{admin.email}", json={"role": "owner"}, headers=key
    )
    assert through_key.status_code == 403, through_key.text
    members = await client.get("/v1/config/members", headers=account.headers)
    roles = {member["email"]: member["role"] for member in members.json()}
    assert roles[admin.email] == "admin"
    # The key still does what an admin may: read the keys, manage members below owner.
    assert (await client.get("/v1/config/keys", headers=key)).status_code == 200
    # The account's own (ownerless) key and an owner's key still make owners.
    owner_key = await _key_of(client, account.headers)
    promoted = await client.put(
        f"/v1/config/members/{admin.email}", json={"role": "owner"}, headers=owner_key
    )
    assert promoted.status_code == 200, promoted.text


async def test_a_key_follows_its_makers_role_and_membership(client: AppClient) -> None:
    account = await make_account(client, await make_tenant(client.database_url))
    admin = await add_person(client.database_url, account_id=account.account_id, role="admin")
    key = await _key_of(client, (await sign_in_person(client, admin)).headers)
    assert (await client.get("/v1/config/keys", headers=key)).status_code == 200
    # Demoted to member: the key can no longer read keys (admin), at the next request.
    demoted = await client.put(
        f"/v1/config/members/{admin.email}", json={"role": "member"}, headers=account.headers
    )
    assert demoted.status_code == 200, demoted.text
    assert (await client.get("/v1/config/keys", headers=key)).status_code == 403
    assert (await client.get("/v1/config/view", headers=key)).status_code == 200
    # Removed from the account: the key acts as nobody.
    removed = await client.delete(f"/v1/config/members/{admin.email}", headers=account.headers)
    assert removed.status_code == 200, removed.text
    refused = await client.get("/v1/config/view", headers=key)
    assert refused.status_code == 403
    assert "no longer a member" in refused.json()["error"]


async def test_a_scoped_members_key_reads_only_their_scope(client: AppClient) -> None:
    account = await make_account(client, await make_tenant(client.database_url))
    await insert_lines(
        client.database_url,
        account.account_id,
        [
            NewLine(line="web one", ts=BASE_MS + 1, host="h1", app="web", level="info"),
            NewLine(line="secret one", ts=BASE_MS + 2, host="h1", app="secretapp", level="info"),
        ],
    )
    group = await client.post(
        "/v1/config/groups", json={"name": "web", "apps": ["web"]}, headers=account.headers
    )
    assert group.status_code == 200, group.text
    admin = await add_person(client.database_url, account_id=account.account_id, role="admin")
    placed = await client.put(
        f"/v1/config/members/{admin.email}",
        json={"groups": [group.json()["id"]]},
        headers=account.headers,
    )
    assert placed.status_code == 200, placed.text
    key = await _key_of(client, (await sign_in_person(client, admin)).headers)
    lines, _pages = await export_all(client, key, size=10)
    assert [line["_line"] for line in lines] == ["web one"]


async def test_an_admin_cannot_read_a_key_that_acts_above_admin(client: AppClient) -> None:
    """The other two-request escalation: the v1 keys API shows a key's secret on GET, so
    an admin who read the account's own key (made with the account: it acts as owner)
    or an owner's key would act as owner with it. Such a key's secret is null for them;
    their own keys, and keys of people at or below their role, are shown."""
    account = await make_account(client, await make_tenant(client.database_url))
    account_key = await _key_of(client, account.headers)
    owner = await add_person(client.database_url, account_id=account.account_id, role="owner")
    owners_key = await _key_of(client, (await sign_in_person(client, owner)).headers)
    peer = await add_person(client.database_url, account_id=account.account_id, role="admin")
    admin = await add_person(client.database_url, account_id=account.account_id, role="admin")
    browser = await sign_in_person(client, admin)
    admins_key = await _key_of(client, browser.headers)
    peers_key = await _key_of(client, (await sign_in_person(client, peer)).headers)
    above = {account_key["Authorization"][6:], owners_key["Authorization"][6:]}
    for reader in (browser.headers, admins_key):
        listed = await client.get("/v1/config/keys", params={"type": "service"}, headers=reader)
        assert listed.status_code == 200, listed.text
        shown = {key["key"] for key in listed.json()}
        assert shown & above == set()
        assert {admins_key["Authorization"][6:], peers_key["Authorization"][6:]} <= shown
        for key in listed.json():
            one = await client.get(f"/v1/config/keys/{key['id']}", headers=reader)
            assert one.status_code == 200, one.text
            assert one.json()["key"] not in above
    # Whatever key an admin could read, none of them makes the admin an owner.
    for key in shown - {None}:
        promoted = await client.put(
            f"/v1/config/members/{admin.email}",
            json={"role": "owner"},
            headers={"Authorization": f"Token {key}"},
        )
        assert promoted.status_code == 403, promoted.text
    # The owner sees every secret.
    everything = await client.get("/v1/config/keys", headers=owners_key)
    assert above <= {key["key"] for key in everything.json()}

"""Item 13: enabling (and disabling) a beta feature is idempotent under concurrency on
both backends. Concurrent PUTs used to race check-then-insert into the primary key and
answer 500 (unique violation) on PostgreSQL."""

from __future__ import annotations

import asyncio

from tests.conftest import AppClient
from tests.factories import make_account, make_tenant


async def test_concurrent_enable_and_disable_never_fail(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    accounts = [await make_account(client, tenant) for _ in range(3)]

    async def call(method: str, account_id: str) -> int:
        path = f"/v3/enterprise/account/{account_id}/features/throttle-processor"
        return (await client.request(method, path, headers=tenant.headers)).status_code

    # 3 accounts x 30 concurrent PUTs, then PUTs and DELETEs interleaved.
    enables = [call("PUT", a.account_id) for a in accounts for _ in range(30)]
    assert await asyncio.gather(*enables) == [200] * 90
    for account in accounts:
        listed = await client.get(
            f"/v3/enterprise/account/{account.account_id}/features", headers=tenant.headers
        )
        assert [f["enabled"] for f in listed.json()["data"]] == [True]
    mixed = [call("PUT" if i % 2 else "DELETE", a.account_id) for a in accounts for i in range(30)]
    assert await asyncio.gather(*mixed) == [200] * 90
    # Enabling again keeps the first creation time.
    path = f"/v3/enterprise/account/{accounts[0].account_id}/features/throttle-processor"
    first = (await client.put(path, headers=tenant.headers)).json()["data"]
    again = (await client.put(path, headers=tenant.headers)).json()["data"]
    assert first == again
    assert first["enabled"] is True
    assert first["created"] is not None


async def test_account_read_matches_the_list_rendering(client: AppClient) -> None:
    """The account read is served from raw rows straight to JSON (the hot path); it must
    be the same document the response model renders for the list and the update."""
    tenant = await make_tenant(client.database_url)
    one = await make_account(client, tenant, owneremail="shared@example.com")
    await make_account(client, tenant, owneremail="shared@example.com")
    path = f"/v3/enterprise/account/{one.account_id}"
    patched = await client.patch(
        path, json={"status": "deactivated", "external_id": "x-1"}, headers=tenant.headers
    )
    read = await client.get(path, headers=tenant.headers)
    assert read.status_code == 200
    assert read.headers["content-type"] == "application/json"
    listed = (await client.get("/v3/enterprise/account", headers=tenant.headers)).json()["data"]
    [entry] = [a for a in listed if a["account_id"] == one.account_id]
    assert read.json()["data"] == entry == patched.json()["data"]
    assert read.json()["meta"] == patched.json()["meta"]
    assert entry["deactivated"] is not None
    assert len(entry["owner"]["accounts"]) == 2

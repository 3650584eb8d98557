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

"""Usage by app, host and tag counts only a scoped member's lines (docs/isolation.md):
a member limited to ``apps: ["web"]`` sees neither the names nor the counts of other
apps, hosts or tags (the usage leak of issue 21); shares are of their scope's lines."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tests.conftest import AppClient
from tests.export.helpers import BASE_MS, insert_lines
from tests.factories import make_account, make_tenant
from tests.users.factories import person_in_group

from tidegate.logs.store import NewLine

WINDOW = {"from": BASE_MS - 3_600_000, "to": BASE_MS + 3_600_000}
DAY = datetime.fromtimestamp(BASE_MS / 1000, tz=UTC).date().isoformat()


async def _get(client: AppClient, headers: dict[str, str], path: str, **params: Any) -> Any:
    response = await client.get(path, params=params or WINDOW, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


async def test_a_scoped_member_counts_only_their_scope(client: AppClient) -> None:
    account = await make_account(client, await make_tenant(client.database_url))
    await insert_lines(
        client.database_url,
        account.account_id,
        [
            *[
                NewLine(line="w", ts=BASE_MS + i, host="web-1", app="web", tags=["shop"])
                for i in range(3)
            ],
            *[
                NewLine(
                    line="s" * 50, ts=BASE_MS + 10 + i, host="vault", app="secretapp", tags=["pci"]
                )
                for i in range(5)
            ],
        ],
    )
    scoped = (
        await person_in_group(
            client,
            account_id=account.account_id,
            headers=account.headers,
            group={"name": "web", "apps": ["web"]},
        )
    ).headers

    # The owner sees every app; the scoped member only theirs, as 100% of what they see.
    owner_apps = await _get(client, account.headers, "/v1/usage/apps")
    assert {item["name"] for item in owner_apps} == {"web", "secretapp"}
    assert await _get(client, scoped, "/v1/usage/apps") == [
        {"name": "web", "percentage": 100.0, "lines": 3}
    ]
    assert [item["name"] for item in await _get(client, scoped, "/v1/usage/hosts")] == ["web-1"]
    assert [item["name"] for item in await _get(client, scoped, "/v1/usage/tags")] == ["shop"]
    named = await _get(client, scoped, "/v1/usage/apps/secretapp")
    assert named["lines"] == 0
    assert (await _get(client, scoped, "/v1/usage/hosts/vault"))["lines"] == 0
    # v2 (bytes): the same scope.
    day = {"from": DAY, "to": DAY}
    v2 = await _get(client, scoped, "/v2/usage/apps", **day)
    assert [item["name"] for item in v2["results"]] == ["web"]
    tags = await _get(client, scoped, "/v2/usage/tags/pci", **day)
    assert tags["results"]["total_bytes"] == 0

"""Keys made through the v1 keys API, for tests of any domain."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import httpx
from tests.factories import AccountCtx


async def create_key(
    client: httpx.AsyncClient, account: AccountCtx, *, type_: str, name: str | None = None
) -> dict[str, Any]:
    """POST /v1/config/keys as the account; the created key's JSON (with the secret)."""
    body = None if name is None else {"name": name}
    response = await client.post(
        "/v1/config/keys", params={"type": type_}, json=body, headers=account.headers
    )
    assert response.status_code == 200, response.text
    created: dict[str, Any] = response.json()
    return created


async def make_service_key(client: httpx.AsyncClient, account: AccountCtx) -> str:
    """A new service key (sta_...) of the account, made through the API."""
    return str((await create_key(client, account, type_="service"))["key"])


async def make_ingestion_key(client: httpx.AsyncClient, account: AccountCtx) -> str:
    return str((await create_key(client, account, type_="ingestion"))["key"])


async def with_service_key(client: httpx.AsyncClient, account: AccountCtx) -> AccountCtx:
    """The same account, now acting through a service key of its own."""
    return replace(account, service_key=await make_service_key(client, account))

"""Ingestion test helpers: an account with an ingestion key, lines read back from the
store, exclusion rules made through the API."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import httpx
from sqlalchemy import select
from tests.factories import AccountCtx, make_account, make_tenant
from tests.keys.factories import make_ingestion_key

from tidegate.db.engine import Database
from tidegate.models import AccountUsage, LogLine


@dataclass
class Ingestor:
    account: AccountCtx
    key: str

    @property
    def account_id(self) -> str:
        return self.account.account_id

    @property
    def headers(self) -> dict[str, str]:
        return {"apikey": self.key}

    @property
    def basic(self) -> dict[str, str]:
        token = base64.b64encode(f"{self.key}:".encode()).decode()
        return {"Authorization": f"Basic {token}"}


async def make_ingestor(client: httpx.AsyncClient, **account_fields: Any) -> Ingestor:
    account = await make_account(
        client, await make_tenant(str(client.database_url)), **account_fields
    )  # type: ignore[attr-defined]
    return Ingestor(account=account, key=await make_ingestion_key(client, account))


async def ingest(
    client: httpx.AsyncClient,
    who: Ingestor,
    lines: list[dict[str, Any]],
    *,
    hostname: str = "web-1",
    **params: Any,
) -> httpx.Response:
    return await client.post(
        "/logs/ingest",
        params={"hostname": hostname, **params},
        json={"lines": lines},
        headers=who.headers,
    )


async def stored_lines(database_url: str, account_id: str) -> list[LogLine]:
    db = Database.connect(database_url)
    try:
        async with db.read_sessions() as session:
            result = await session.execute(
                select(LogLine).where(LogLine.account_id == account_id).order_by(LogLine.id)
            )
            return list(result.scalars())
    finally:
        await db.dispose()


async def usage_rows(database_url: str, account_id: str) -> list[AccountUsage]:
    db = Database.connect(database_url)
    try:
        async with db.read_sessions() as session:
            result = await session.execute(
                select(AccountUsage).where(AccountUsage.account_id == account_id)
            )
            return list(result.scalars())
    finally:
        await db.dispose()


async def add_rule(client: httpx.AsyncClient, who: Ingestor, **rule: Any) -> dict[str, Any]:
    body = {"title": "rule", "active": True, **rule}
    response = await client.post(
        "/v1/config/ingestion/exclusions", json=body, headers=who.account.headers
    )
    assert response.status_code == 200, response.text
    created: dict[str, Any] = response.json()
    return created

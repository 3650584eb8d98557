"""Small factories: an enterprise with its key, child accounts, and account keys."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx

from tidegate.db.engine import Database
from tidegate.enterprise.service import create_enterprise


@dataclass
class Tenant:
    enterprise_id: str
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Token {self.token}"}

    def as_account(self, account_id: str) -> dict[str, str]:
        return {**self.headers, "x-delegate-account-id": account_id}


@dataclass
class AccountCtx:
    tenant: Tenant
    account_id: str
    data: dict[str, Any]
    service_key: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def headers(self) -> dict[str, str]:
        """Headers acting as this account: its service key when it has one, else the
        enterprise key with delegation."""
        if self.service_key:
            return {"Authorization": f"Token {self.service_key}"}
        return self.tenant.as_account(self.account_id)


async def make_tenant(database_url: str, *, name: str | None = None) -> Tenant:
    db = Database.connect(database_url)
    try:
        async with db.write_sessions() as session:
            enterprise, token = await create_enterprise(
                session=session, name=name or f"ent-{uuid.uuid4().hex[:6]}"
            )
            await session.commit()
            return Tenant(enterprise_id=enterprise.id, token=token)
    finally:
        await db.dispose()


async def make_account(client: httpx.AsyncClient, tenant: Tenant, **fields: Any) -> AccountCtx:
    body = {"company": "Acme", "owneremail": f"owner-{uuid.uuid4().hex[:6]}@example.com", **fields}
    response = await client.post("/v3/enterprise/account", json=body, headers=tenant.headers)
    assert response.status_code == 201, response.text
    data = response.json()["data"]
    return AccountCtx(tenant=tenant, account_id=data["account_id"], data=data)


async def insert_key(
    database_url: str, *, kind: str, account_id: str | None = None, enterprise_id: str | None = None
) -> str:
    """A key written straight to the database, for tests that must not depend on the keys API."""
    from tidegate.auth.secrets import (
        INGESTION_DOMAIN,
        MANAGEMENT_DOMAIN,
        hash_secret,
        hint,
        new_ingestion_key,
        new_service_key,
    )
    from tidegate.models import ApiKey

    secret = new_ingestion_key() if kind == "ingestion" else new_service_key()
    domain = INGESTION_DOMAIN if kind == "ingestion" else MANAGEMENT_DOMAIN
    db = Database.connect(database_url)
    try:
        async with db.write_sessions() as session:
            session.add(
                ApiKey(
                    kind=kind,
                    account_id=account_id,
                    enterprise_id=enterprise_id,
                    key_hash=hash_secret(secret, domain=domain),
                    hint=hint(secret),
                )
            )
            await session.commit()
    finally:
        await db.dispose()
    return secret


# An enterprise "e1", its owner "u1" and account "a1", as raw rows: for migration tests
# that seed a database at an old revision, before the models match the schema.
RAW_ACCOUNT_ROWS = (
    "INSERT INTO enterprises (id, name, status, created_at) "
    "VALUES ('e1', 'e', 'active', CURRENT_TIMESTAMP)",
    "INSERT INTO users (id, enterprise_id, email, verified, created_at) "
    "VALUES ('u1', 'e1', 'o@example.com', true, CURRENT_TIMESTAMP)",
    "INSERT INTO accounts (id, enterprise_id, short_id, company, owner_id, "
    "plan_type, retention, status, enable_syslog, meta, created_at) VALUES ('a1', "
    "'e1', 's1', 'c', 'u1', 'x', 30, 'active', false, '{}', CURRENT_TIMESTAMP)",
)

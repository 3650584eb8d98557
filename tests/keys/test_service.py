"""The keys service against the database: what is stored, and what never is."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from tests.conftest import AppClient
from tests.factories import make_account, make_tenant

from tidegate.auth.roles import Role
from tidegate.auth.secrets import INGESTION_DOMAIN, MANAGEMENT_DOMAIN, Sealer, hash_secret
from tidegate.db.engine import Database
from tidegate.errors import NotFound
from tidegate.keys import service
from tidegate.models import ApiKey

SEALER = Sealer(b"\x02" * 32)


@pytest.fixture
async def session(client: AppClient) -> AsyncIterator[AsyncSession]:
    db = Database.connect(client.database_url)
    try:
        async with db.write_sessions() as session:
            yield session
            await session.rollback()
    finally:
        await db.dispose()


@pytest.mark.parametrize(
    ("key_type", "domain"), [("service", MANAGEMENT_DOMAIN), ("ingestion", INGESTION_DOMAIN)]
)
async def test_only_a_keyed_hash_is_stored(
    client: AppClient, session: AsyncSession, key_type: str, domain: str
) -> None:
    account = await make_account(client, await make_tenant(client.database_url))
    created = await service.create_key(
        session=session,
        sealer=SEALER,
        account_id=account.account_id,
        key_type=key_type,  # type: ignore[arg-type]
        name="",
    )
    stored = (await session.execute(select(ApiKey).where(ApiKey.id == created.id))).scalar_one()
    assert stored.key_hash == hash_secret(created.key, domain=domain)
    assert stored.sealed_key is not None
    assert created.key not in (stored.key_hash, stored.name, stored.hint, stored.sealed_key)
    # Sealed, not hashed: only the server secret opens it.
    assert SEALER.open(stored.sealed_key) == created.key
    assert Sealer(b"\x01" * 32).open(stored.sealed_key) is None
    assert stored.hint == created.key[-4:]
    assert stored.kind == key_type
    assert stored.account_id == account.account_id
    assert stored.enterprise_id is None
    assert created.name is None  # an empty name is no name


async def test_enterprise_keys_are_invisible(client: AppClient, session: AsyncSession) -> None:
    # Everything committed before the test's session opens its (SQLite: exclusive)
    # write transaction.
    tenant = await make_tenant(client.database_url)
    account = await make_account(client, tenant)
    enterprise_key = (
        await session.execute(select(ApiKey).where(ApiKey.enterprise_id == tenant.enterprise_id))
    ).scalar_one()
    # Even an account id that matches nothing cannot reach the enterprise key, by the
    # read the key routes use.
    db = Database.connect(client.database_url)
    try:
        with pytest.raises(NotFound):
            await service.read_key(
                db=db,
                sealer=SEALER,
                account_id=account.account_id,
                key_id=enterprise_key.id,
                reader_role=Role.OWNER,
            )
        listed = await service.list_keys(
            db=db, sealer=SEALER, account_id=account.account_id, reader_role=Role.OWNER
        )
    finally:
        await db.dispose()
    assert listed == []

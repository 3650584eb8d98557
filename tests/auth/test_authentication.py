"""Credentials and tenancy at the door: who may call what."""

from __future__ import annotations

import pytest
from tests.conftest import AppClient
from tests.factories import insert_key, make_account, make_tenant


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Token "},
        {"Authorization": "Bearer ste_" + "0" * 40},
        {"Authorization": "Token ste_" + "0" * 40},
        {"servicekey": "sta_" + "0" * 40},
        {"Authorization": "ste_" + "0" * 40},
    ],
)
async def test_missing_or_bad_credentials_are_401(
    client: AppClient, headers: dict[str, str]
) -> None:
    response = await client.get("/v3/enterprise", headers=headers)
    assert response.status_code == 401
    body = response.json()
    assert body["status"] == 401
    assert body["code"] == "EUNAUTHORIZED"


async def test_401_on_v1_uses_the_legacy_shape(client: AppClient) -> None:
    response = await client.get("/v1/config/board")
    assert response.status_code == 401
    assert response.json() == {
        "error": response.json()["error"],
        "code": "Unauthorized",
        "status": "error",
    }


async def test_service_key_works_with_token_and_legacy_header(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    account = await make_account(client, tenant)
    key = await insert_key(client.database_url, kind="service", account_id=account.account_id)
    # An account key on an enterprise endpoint: valid credentials, wrong kind.
    for headers in ({"Authorization": f"Token {key}"}, {"servicekey": key}):
        response = await client.get("/v3/enterprise", headers=headers)
        assert response.status_code == 403, headers
        assert response.json()["code"] == "EFORBIDDEN"


async def test_ingestion_key_is_not_a_management_credential(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    account = await make_account(client, tenant)
    key = await insert_key(client.database_url, kind="ingestion", account_id=account.account_id)
    response = await client.get("/v3/enterprise", headers={"Authorization": f"Token {key}"})
    assert response.status_code == 401


async def test_delegation_acts_as_the_account_and_only_a_child_one(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    other = await make_tenant(client.database_url)
    mine = await make_account(client, tenant)
    theirs = await make_account(client, other)

    # Acting as an account, the enterprise endpoints are the wrong kind of call.
    as_account = await client.get("/v3/enterprise", headers=tenant.as_account(mine.account_id))
    assert as_account.status_code == 403
    foreign = await client.get("/v3/enterprise", headers=tenant.as_account(theirs.account_id))
    assert foreign.status_code == 403
    missing = await client.get("/v3/enterprise", headers=tenant.as_account("nope"))
    assert missing.status_code == 403


async def test_enterprise_key_sees_only_its_own_accounts(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    other = await make_tenant(client.database_url)
    theirs = await make_account(client, other)
    path = f"/v3/enterprise/account/{theirs.account_id}"

    read = await client.get(path, headers=tenant.headers)
    missing = await client.get(
        "/v3/enterprise/account/ffffffffffffffffffffffff", headers=tenant.headers
    )
    assert read.status_code == missing.status_code == 404
    assert read.json() == missing.json()
    changed = await client.patch(path, json={"company": "pwned"}, headers=tenant.headers)
    assert changed.status_code == 404
    features = await client.put(path + "/features/throttle-processor", headers=tenant.headers)
    assert features.status_code == 404
    listed = (await client.get("/v3/enterprise", headers=tenant.headers)).json()["data"]["accounts"]
    assert theirs.account_id not in {a["account_id"] for a in listed}
    assert (await client.get(path, headers=other.headers)).json()["data"]["company"] == "Acme"


async def test_deactivated_account_key_is_refused(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    account = await make_account(client, tenant)
    key = await insert_key(client.database_url, kind="service", account_id=account.account_id)
    await client.patch(
        f"/v3/enterprise/account/{account.account_id}",
        json={"status": "deactivated"},
        headers=tenant.headers,
    )
    response = await client.get("/v1/config/board", headers={"Authorization": f"Token {key}"})
    assert response.status_code == 403


async def test_deleted_key_is_refused_by_the_next_request(client: AppClient) -> None:
    """Credentials are not cached: deleting a key takes effect at once."""
    tenant = await make_tenant(client.database_url)
    account = await make_account(client, tenant)
    key = await insert_key(client.database_url, kind="service", account_id=account.account_id)
    headers = {"Authorization": f"Token {key}"}
    assert (await client.get("/v1/config/board", headers=headers)).status_code == 200
    from sqlalchemy import delete

    from tidegate.auth.secrets import MANAGEMENT_DOMAIN, hash_secret
    from tidegate.db.engine import Database
    from tidegate.models import ApiKey

    db = Database.connect(client.database_url)
    try:
        async with db.write_sessions() as session:
            await session.execute(
                delete(ApiKey).where(ApiKey.key_hash == hash_secret(key, domain=MANAGEMENT_DOMAIN))
            )
            await session.commit()
    finally:
        await db.dispose()
    assert (await client.get("/v1/config/board", headers=headers)).status_code == 401

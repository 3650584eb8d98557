"""The v1 keys API over HTTP, on SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from tests.conftest import AppClient
from tests.factories import AccountCtx, insert_key, make_account, make_tenant
from tests.keys.factories import create_key, make_ingestion_key, make_service_key

from tidegate.db.engine import Database
from tidegate.models import ApiKey

KEYS = "/v1/config/keys"


def assert_legacy_error(response: httpx.Response, status: int, code: str | None = None) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "code", "status"}
    assert isinstance(body["error"], str)
    assert body["error"]
    assert isinstance(body["code"], str)
    assert body["status"] == "error"
    if code is not None:
        assert body["code"] == code
    return str(body["error"])


async def new_account(client: AppClient) -> AccountCtx:
    return await make_account(client, await make_tenant(client.database_url))


async def test_create_service_key_shows_the_secret_once(client: AppClient) -> None:
    account = await new_account(client)
    before = time.time_ns() // 1_000_000

    created = await create_key(client, account, type_="service", name="ci")

    assert set(created) == {"id", "key", "name", "type", "created"}
    assert re.fullmatch(r"sta_[0-9a-f]{40}", created["key"])
    assert created["name"] == "ci"
    assert created["type"] == "service"
    assert isinstance(created["created"], int)
    # Epoch milliseconds, as on the platform.
    assert before - 1000 <= created["created"] <= time.time_ns() // 1_000_000 + 1000

    listed = (await client.get(KEYS, headers=account.headers)).json()
    assert listed == [
        {
            "id": created["id"],
            "name": "ci",
            "type": "service",
            "key": created["key"],
            "created": created["created"],
            "hint": created["key"][-4:],
        }
    ]
    one = await client.get(f"{KEYS}/{created['id']}", headers=account.headers)
    assert one.status_code == 200
    assert one.json() == listed[0]


async def test_create_ingestion_key_without_a_body(client: AppClient) -> None:
    account = await new_account(client)
    response = await client.post(KEYS, params={"type": "ingestion"}, headers=account.headers)
    assert response.status_code == 200, response.text
    created = response.json()
    assert re.fullmatch(r"[0-9a-f]{32}", created["key"])
    assert created["type"] == "ingestion"
    assert created["name"] is None


@pytest.mark.parametrize(
    ("params", "body"),
    [
        ({}, None),
        ({"type": "enterprise"}, None),
        ({"type": ""}, None),
        ({"type": "service"}, {"name": "x", "extra": 1}),
        ({"type": "service"}, {"name": 5}),
        ({"type": "service"}, {"name": "x" * 251}),
        ({"type": "service"}, {"name": "bad\u0000name"}),
    ],
)
async def test_create_key_validation(
    client: AppClient, params: dict[str, str], body: dict[str, Any] | None
) -> None:
    account = await new_account(client)
    response = await client.post(KEYS, params=params, json=body, headers=account.headers)
    assert_legacy_error(response, 400, "BadRequest")


async def test_missing_type_names_the_parameter(client: AppClient) -> None:
    account = await new_account(client)
    response = await client.post(KEYS, headers=account.headers)
    assert "'type'" in assert_legacy_error(response, 400)


async def test_list_filters_by_type_and_hides_enterprise_keys(client: AppClient) -> None:
    account = await new_account(client)
    service = await create_key(client, account, type_="service")
    ingestion = await create_key(client, account, type_="ingestion")

    everything = (await client.get(KEYS, headers=account.headers)).json()
    assert [key["id"] for key in everything] == [service["id"], ingestion["id"]]
    assert [key["key"] for key in everything] == [service["key"], ingestion["key"]]
    assert {key["type"] for key in everything} == {"service", "ingestion"}

    only_service = (
        await client.get(KEYS, params={"type": "service"}, headers=account.headers)
    ).json()
    assert [key["id"] for key in only_service] == [service["id"]]
    only_ingestion = (
        await client.get(KEYS, params={"type": "ingestion"}, headers=account.headers)
    ).json()
    assert [key["id"] for key in only_ingestion] == [ingestion["id"]]

    bad = await client.get(KEYS, params={"type": "enterprise"}, headers=account.headers)
    assert_legacy_error(bad, 400)


async def test_rename(client: AppClient) -> None:
    account = await new_account(client)
    created = await create_key(client, account, type_="service", name="old")
    path = f"{KEYS}/{created['id']}"

    renamed = await client.put(path, json={"name": "new"}, headers=account.headers)
    assert renamed.status_code == 200
    assert renamed.json()["name"] == "new"
    assert renamed.json()["key"] == created["key"]
    assert (await client.get(path, headers=account.headers)).json()["name"] == "new"

    untouched = await client.put(path, json={}, headers=account.headers)
    assert untouched.json()["name"] == "new"
    cleared = await client.put(path, json={"name": None}, headers=account.headers)
    assert cleared.json()["name"] is None

    bad = await client.put(path, json={"name": "x", "type": "ingestion"}, headers=account.headers)
    assert_legacy_error(bad, 400)


async def test_service_key_authenticates_both_ways_for_its_account_only(
    client: AppClient,
) -> None:
    tenant = await make_tenant(client.database_url)
    mine = await make_account(client, tenant)
    sibling = await make_account(client, tenant)
    key = await make_service_key(client, mine)
    sibling_key = await create_key(client, sibling, type_="ingestion")

    for headers in ({"Authorization": f"Token {key}"}, {"servicekey": key}):
        listed = await client.get(KEYS, headers=headers)
        assert listed.status_code == 200, listed.text
        assert sibling_key["id"] not in {item["id"] for item in listed.json()}
        foreign = await client.get(f"{KEYS}/{sibling_key['id']}", headers=headers)
        assert_legacy_error(foreign, 404, "NotFound")

    # A service key is an account credential: the enterprise API is not for it.
    enterprise = await client.get("/v3/enterprise", headers={"Authorization": f"Token {key}"})
    assert enterprise.status_code == 403


async def test_deleted_service_key_stops_authenticating_at_once(client: AppClient) -> None:
    account = await new_account(client)
    created = await create_key(client, account, type_="service")
    headers = {"Authorization": f"Token {created['key']}"}
    assert (await client.get(KEYS, headers=headers)).status_code == 200

    deleted = await client.delete(f"{KEYS}/{created['id']}", headers=account.headers)
    assert deleted.status_code == 200
    assert deleted.json()["id"] == created["id"]
    assert deleted.json()["key"] == created["key"]

    assert_legacy_error(await client.get(KEYS, headers=headers), 401, "Unauthorized")
    assert_legacy_error(await client.get(KEYS, headers={"servicekey": created["key"]}), 401)
    gone = await client.get(f"{KEYS}/{created['id']}", headers=account.headers)
    assert_legacy_error(gone, 404, "NotFound")
    again = await client.delete(f"{KEYS}/{created['id']}", headers=account.headers)
    assert_legacy_error(again, 404, "NotFound")


async def test_a_service_key_may_delete_itself(client: AppClient) -> None:
    account = await new_account(client)
    created = await create_key(client, account, type_="service")
    headers = {"Authorization": f"Token {created['key']}"}
    response = await client.delete(f"{KEYS}/{created['id']}", headers=headers)
    assert response.status_code == 200
    assert_legacy_error(await client.get(KEYS, headers=headers), 401)


async def test_ingestion_key_is_not_a_management_credential(client: AppClient) -> None:
    account = await new_account(client)
    key = await make_ingestion_key(client, account)
    for headers in ({"Authorization": f"Token {key}"}, {"servicekey": key}):
        assert_legacy_error(await client.get(KEYS, headers=headers), 401, "Unauthorized")


async def test_credentials_required(client: AppClient) -> None:
    assert_legacy_error(await client.get(KEYS), 401, "Unauthorized")
    assert_legacy_error(
        await client.post(KEYS, params={"type": "service"}, headers={"Authorization": "Token x"}),
        401,
    )


async def test_enterprise_key_without_delegation_is_forbidden(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    account = await make_account(client, tenant)
    created = await create_key(client, account, type_="service")
    headers = tenant.headers
    assert_legacy_error(await client.get(KEYS, headers=headers), 403, "Forbidden")
    assert_legacy_error(
        await client.post(KEYS, params={"type": "service"}, headers=headers), 403, "Forbidden"
    )
    for method in ("GET", "PUT", "DELETE"):
        body = {"name": "x"} if method == "PUT" else None
        response = await client.request(
            method, f"{KEYS}/{created['id']}", json=body, headers=headers
        )
        assert_legacy_error(response, 403, "Forbidden")


@pytest.mark.parametrize("same_enterprise", [True, False])
async def test_another_accounts_key_is_not_found(client: AppClient, same_enterprise: bool) -> None:
    owner_tenant = await make_tenant(client.database_url)
    owner = await make_account(client, owner_tenant)
    other_tenant = owner_tenant if same_enterprise else await make_tenant(client.database_url)
    intruder = await make_account(client, other_tenant)
    victim = await create_key(client, owner, type_="service", name="victim")
    path = f"{KEYS}/{victim['id']}"

    for ctx in (intruder, AccountCtx(intruder.tenant, intruder.account_id, intruder.data,
                                     service_key=await make_service_key(client, intruder))):  # fmt: skip
        assert_legacy_error(await client.get(path, headers=ctx.headers), 404, "NotFound")
        renamed = await client.put(path, json={"name": "pwned"}, headers=ctx.headers)
        assert_legacy_error(renamed, 404, "NotFound")
        assert_legacy_error(await client.delete(path, headers=ctx.headers), 404, "NotFound")
        listed = (await client.get(KEYS, headers=ctx.headers)).json()
        assert victim["id"] not in {item["id"] for item in listed}

    # Untouched, and still a working credential.
    still = await client.get(path, headers=owner.headers)
    assert still.json()["name"] == "victim"
    works = await client.get(KEYS, headers={"Authorization": f"Token {victim['key']}"})
    assert works.status_code == 200


async def test_an_enterprise_cannot_delegate_to_another_enterprises_account(
    client: AppClient,
) -> None:
    owner = await new_account(client)
    stranger = await make_tenant(client.database_url)
    response = await client.get(KEYS, headers=stranger.as_account(owner.account_id))
    assert_legacy_error(response, 403, "Forbidden")


@pytest.mark.parametrize("key_id", ["nope", "0" * 24, "x" * 25])
async def test_unknown_or_malformed_ids(client: AppClient, key_id: str) -> None:
    account = await new_account(client)
    response = await client.get(f"{KEYS}/{key_id}", headers=account.headers)
    assert_legacy_error(response, 400 if len(key_id) > 24 else 404)


async def test_concurrent_deletes_of_one_key(client: AppClient) -> None:
    account = await new_account(client)
    created = await create_key(client, account, type_="ingestion")
    path = f"{KEYS}/{created['id']}"
    answers = await asyncio.gather(
        *(client.delete(path, headers=account.headers) for _ in range(3))
    )
    assert sorted(answer.status_code for answer in answers) == [200, 404, 404]


async def test_a_key_made_before_sealing_reads_back_with_a_null_key(client: AppClient) -> None:
    # Keys made before migration 0005 exist only as a keyed hash: the secret cannot be
    # shown again, so GET answers every other field with ``key: null`` (docs/api-v1.md).
    account = await new_account(client)
    secret = await insert_key(client.database_url, kind="ingestion", account_id=account.account_id)
    (listed,) = (await client.get(KEYS, headers=account.headers)).json()
    assert listed["key"] is None
    assert listed["hint"] == secret[-4:]
    assert listed["type"] == "ingestion"
    one = await client.get(f"{KEYS}/{listed['id']}", headers=account.headers)
    assert one.status_code == 200
    assert one.json() == listed


async def test_the_sealed_key_is_not_in_the_database_in_clear(client: AppClient) -> None:
    account = await new_account(client)
    created = await create_key(client, account, type_="service", name="sealed")
    db = Database.connect(client.database_url)
    try:
        async with db.read_sessions() as session:
            row = (
                await session.execute(select(ApiKey).where(ApiKey.id == created["id"]))
            ).scalar_one()
    finally:
        await db.dispose()
    assert row.sealed_key is not None
    for column in (row.sealed_key, row.key_hash, row.hint, row.name):
        assert created["key"] not in (column or "")

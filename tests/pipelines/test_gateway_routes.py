"""Gateway routes, access keys and signing keys over HTTP, and the service functions the
data plane will use, on SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from tests.conftest import AppClient
from tests.factories import AccountCtx, make_account, make_tenant
from tests.pipelines.factories import (
    add_node,
    assert_envelope,
    assert_v3_error,
    make_pipeline,
    make_route,
    publish,
    source_with_route,
)

from tidegate.auth.secrets import Sealer, load_server_secret
from tidegate.db.engine import Database
from tidegate.errors import ServiceUnavailable
from tidegate.models import AccessKey, SigningKey
from tidegate.pipelines import dataplane, gateway_service
from tidegate.pipelines.sealed_config import bind_sealer

SIGNING_A = "whsec-alpha-0123456789abcdef"
SIGNING_B = "whsec-bravo-fedcba9876543210"


async def new_account(client: AppClient) -> AccountCtx:
    return await make_account(client, await make_tenant(client.database_url))


@asynccontextmanager
async def db_session(client: AppClient) -> AsyncIterator[AsyncSession]:
    db = Database.connect(client.database_url)
    bind_sealer(db, sealer_of(client))
    try:
        async with db.read_sessions() as session:
            yield session
    finally:
        await db.dispose()


def sealer_of(client: AppClient) -> Sealer:
    settings = client.settings
    return Sealer(load_server_secret(configured=settings.secret_key, data_dir=settings.data_dir))


async def put_signing_key(
    client: AppClient, account: AccountCtx, route_id: str, key: str
) -> httpx.Response:
    return await client.put(
        f"/v3/pipeline/gateway-route/{route_id}/signing-key",
        json={"key": key},
        headers={**account.headers, "Content-Type": "application/json"},
    )


async def test_route_crud(client: AppClient) -> None:
    account = await new_account(client)
    created = await client.post(
        "/v3/pipeline/gateway-route", json={"title": "Webhooks"}, headers=account.headers
    )
    assert created.status_code == 201
    route = assert_envelope(created.json(), type_="gateway route")
    assert route["title"] == "Webhooks"
    assert route["account_id"] == account.account_id
    assert route["sources"] == []
    route_id = route["id"]
    path = f"/v3/pipeline/gateway-route/{route_id}"

    got = await client.get(path, headers=account.headers)
    assert got.json()["data"]["id"] == route_id
    assert got.json()["meta"]["links"]["self"]["replace"] == {
        "method": "put",
        "uri": "/v3/pipeline/gateway-route/{gateway_route_id}",
    }

    replaced = await client.put(path, json={"title": "Hooks"}, headers=account.headers)
    assert replaced.status_code == 200
    assert replaced.json()["data"]["title"] == "Hooks"
    missing_title = await client.put(path, json={}, headers=account.headers)
    assert_v3_error(missing_title, 400)

    deleted = await client.delete(path, headers=account.headers)
    assert deleted.status_code == 200
    assert_v3_error(await client.get(path, headers=account.headers), 404)


async def test_route_shows_its_sources_and_cannot_be_deleted_under_them(
    client: AppClient,
) -> None:
    account = await new_account(client)
    pipeline_id = await make_pipeline(client, account)
    route_id, source_id = await source_with_route(client, account, pipeline_id)
    path = f"/v3/pipeline/gateway-route/{route_id}"

    got = await client.get(path, headers=account.headers)
    assert got.json()["data"]["sources"] == [{"pipeline_id": pipeline_id, "source_id": source_id}]
    listed = await client.get("/v3/pipeline/gateway-route", headers=account.headers)
    assert listed.json()["data"][0]["sources"] == [
        {"pipeline_id": pipeline_id, "source_id": source_id}
    ]

    refused = await client.delete(path, headers=account.headers)
    error = assert_v3_error(refused, 409)
    assert source_id in error["message"]

    await client.delete(f"/v3/pipeline/{pipeline_id}/source/{source_id}", headers=account.headers)
    assert (await client.delete(path, headers=account.headers)).status_code == 200


async def test_access_key_is_shown_once(client: AppClient) -> None:
    account = await new_account(client)
    route_id = await make_route(client, account)
    base = f"/v3/pipeline/gateway-route/{route_id}/access-key"

    created = await client.post(
        base, json={"type": "generated", "title": "vendor"}, headers=account.headers
    )
    assert created.status_code == 201
    data = assert_envelope(created.json(), type_="access key")
    assert set(data) == {"key", "id", "account_id", "title", "gateway_route_id", "created_at"}
    secret = data["key"]
    assert data["account_id"] == account.account_id
    assert data["gateway_route_id"] == route_id
    assert data["title"] == "vendor"

    listed = await client.get(base, headers=account.headers)
    assert secret not in listed.text
    [item] = listed.json()["data"]
    assert item["id"] == data["id"]
    assert "key" not in item
    assert item["hint"] == secret[-4:]
    assert (
        secret
        not in (
            await client.get(f"/v3/pipeline/gateway-route/{route_id}", headers=account.headers)
        ).text
    )

    async with db_session(client) as session:
        row = await session.get(AccessKey, data["id"])
        assert row is not None
        assert secret not in (row.key_hash, row.hint)
        found = await gateway_service.access_key_for_route(
            session=session, gateway_route_id=route_id, key=secret
        )
        assert found is not None
        assert found.id == data["id"]
        assert (
            await gateway_service.access_key_for_route(
                session=session, gateway_route_id=route_id, key=secret + "x"
            )
            is None
        )
        other_route = "00000000-0000-0000-0000-000000000000"
        assert (
            await gateway_service.access_key_for_route(
                session=session, gateway_route_id=other_route, key=secret
            )
            is None
        )

    deleted = await client.delete(f"{base}/{data['id']}", headers=account.headers)
    assert deleted.status_code == 200
    assert secret not in deleted.text
    assert (await client.get(base, headers=account.headers)).json()["data"] == []
    assert_v3_error(await client.delete(f"{base}/{data['id']}", headers=account.headers), 404)


async def test_access_key_body_rules(client: AppClient) -> None:
    account = await new_account(client)
    route_id = await make_route(client, account)
    base = f"/v3/pipeline/gateway-route/{route_id}/access-key"
    wrong_type = await client.post(
        base, json={"type": "provided", "title": "x"}, headers=account.headers
    )
    assert assert_v3_error(wrong_type, 400)["errors"][0]["instance_path"] == "/type"
    defaulted = await client.post(base, json={}, headers=account.headers)
    assert defaulted.status_code == 201


async def test_signing_keys_several_idempotent_removable_never_echoed(
    client: AppClient,
) -> None:
    account = await new_account(client)
    route_id = await make_route(client, account)
    base = f"/v3/pipeline/gateway-route/{route_id}/signing-key"
    bodies: list[str] = []

    first = await put_signing_key(client, account, route_id, SIGNING_A)
    assert first.status_code == 201
    key_a = assert_envelope(first.json(), type_="signing key")
    assert set(key_a) == {"id", "account_id", "gateway_route_id", "fingerprint", "created_at"}
    again = await put_signing_key(client, account, route_id, SIGNING_A)
    assert again.status_code == 200
    assert again.json()["data"]["id"] == key_a["id"]
    second = await put_signing_key(client, account, route_id, SIGNING_B)
    assert second.status_code == 201
    key_b = second.json()["data"]
    assert key_b["id"] != key_a["id"]
    assert key_b["fingerprint"] != key_a["fingerprint"]
    bodies += [first.text, again.text, second.text]

    listed = await client.get(base, headers=account.headers)
    assert [k["id"] for k in assert_envelope(listed.json(), type_="signing key")] == [
        key_a["id"],
        key_b["id"],
    ]
    bodies.append(listed.text)
    bodies.append(
        (await client.get(f"/v3/pipeline/gateway-route/{route_id}", headers=account.headers)).text
    )
    bodies.append((await client.get("/v3/pipeline/gateway-route", headers=account.headers)).text)

    async with db_session(client) as session:
        rows = (
            (
                await session.execute(
                    select(SigningKey).where(SigningKey.gateway_route_id == route_id)
                )
            )
            .scalars()
            .all()
        )
        assert len(rows) == 2
        for row in rows:
            assert row.encrypted_key not in (SIGNING_A, SIGNING_B)
            assert SIGNING_A not in row.encrypted_key
            assert SIGNING_B not in row.encrypted_key
            assert SIGNING_A not in row.fingerprint
        secrets = await gateway_service.signing_secrets(
            session=session, sealer=sealer_of(client), gateway_route_id=route_id
        )
        assert secrets == [SIGNING_A.encode(), SIGNING_B.encode()]

    removed = await client.delete(f"{base}/{key_a['id']}", headers=account.headers)
    assert removed.status_code == 200
    assert removed.json()["data"]["id"] == key_a["id"]
    bodies.append(removed.text)
    remaining = await client.get(base, headers=account.headers)
    assert [k["id"] for k in remaining.json()["data"]] == [key_b["id"]]
    assert_v3_error(await client.delete(f"{base}/{key_a['id']}", headers=account.headers), 404)

    for body in bodies:
        assert SIGNING_A not in body
        assert SIGNING_B not in body

    async with db_session(client) as session:
        secrets = await gateway_service.signing_secrets(
            session=session, sealer=sealer_of(client), gateway_route_id=route_id
        )
        assert secrets == [SIGNING_B.encode()]


async def test_route_without_signing_keys_has_no_secrets(client: AppClient) -> None:
    account = await new_account(client)
    route_id = await make_route(client, account)
    async with db_session(client) as session:
        assert (
            await gateway_service.signing_secrets(
                session=session, sealer=sealer_of(client), gateway_route_id=route_id
            )
            == []
        )


async def test_signing_keys_of_a_route_unreadable_fail_closed(client: AppClient) -> None:
    account = await new_account(client)
    route_id = await make_route(client, account)
    assert (await put_signing_key(client, account, route_id, SIGNING_A)).status_code == 201
    wrong_sealer = Sealer(b"\x01" * 32)
    async with db_session(client) as session:
        with pytest.raises(ServiceUnavailable):
            await gateway_service.signing_secrets(
                session=session, sealer=wrong_sealer, gateway_route_id=route_id
            )


@pytest.mark.parametrize(
    ("body", "keyword"),
    [
        ({}, "required"),
        ({"key": ""}, "minLength"),
        ({"key": "k" * 4097}, "maxLength"),
        ({"key": 12345678901234567890}, "type"),
        ({"key": SIGNING_A, "extra": True}, "additionalProperties"),
    ],
)
async def test_signing_key_body_rules(
    client: AppClient, body: dict[str, object], keyword: str
) -> None:
    account = await new_account(client)
    route_id = await make_route(client, account)
    response = await client.put(
        f"/v3/pipeline/gateway-route/{route_id}/signing-key",
        json=body,
        headers=account.headers,
    )
    error = assert_v3_error(response, 400)
    assert error["errors"][0]["keyword"] == keyword
    assert SIGNING_A not in response.text


@pytest.mark.parametrize("key", ["k", "short", "0123456789abcde", "tab\there\n", "k" * 4096])
async def test_any_non_empty_signing_key_is_accepted_and_signs(client: AppClient, key: str) -> None:
    """The spec gives ``key`` no length or character rule: a short key is a valid
    request (it used to be a 400 under 16 characters), and it is the HMAC secret."""
    account = await new_account(client)
    route_id = await make_route(client, account)
    response = await put_signing_key(client, account, route_id, key)
    assert response.status_code == 201, response.text
    assert response.json()["data"].keys().isdisjoint({"key", "secret"})
    async with db_session(client) as session:
        secrets = await gateway_service.signing_secrets(
            session=session, sealer=sealer_of(client), gateway_route_id=route_id
        )
    assert secrets == [key.encode()]


async def test_signing_key_needs_json(client: AppClient) -> None:
    account = await new_account(client)
    route_id = await make_route(client, account)
    response = await client.put(
        f"/v3/pipeline/gateway-route/{route_id}/signing-key",
        content=f"key={SIGNING_A}",
        headers={**account.headers, "Content-Type": "application/x-www-form-urlencoded"},
    )
    assert_v3_error(response, 415)


async def test_deleting_a_route_deletes_its_keys(client: AppClient) -> None:
    account = await new_account(client)
    route_id = await make_route(client, account)
    await put_signing_key(client, account, route_id, SIGNING_A)
    await client.post(
        f"/v3/pipeline/gateway-route/{route_id}/access-key", json={}, headers=account.headers
    )
    assert (
        await client.delete(f"/v3/pipeline/gateway-route/{route_id}", headers=account.headers)
    ).status_code == 200
    async with db_session(client) as session:
        for model in (SigningKey, AccessKey):
            rows = await session.execute(select(model).where(model.gateway_route_id == route_id))
            assert rows.first() is None


async def test_dataplane_loads_the_pipelines_of_a_route(client: AppClient) -> None:
    account = await new_account(client)
    pipeline_id = await make_pipeline(client, account)
    route_id, source_id = await source_with_route(client, account, pipeline_id)
    sink = await add_node(
        client, account, pipeline_id, "destination", {"type": "log_analysis", "inputs": []}
    )
    condition = {"field": ".level", "str_operator": "equal", "value": "error"}
    filter_id = await add_node(
        client,
        account,
        pipeline_id,
        "processor",
        {"type": "filter", "inputs": [source_id], "user_config": {"condition": condition}},
    )
    # Wired last, so creation order differs from run order.
    await client.patch(
        f"/v3/pipeline/{pipeline_id}/destination/{sink}",
        json={"inputs": [filter_id]},
        headers=account.headers,
    )

    async with db_session(client) as session:
        # Nothing runs before the draft is published.
        assert await dataplane.pipelines_for_route(session=session, gateway_route_id=route_id) == []
    await publish(client, account, pipeline_id)
    async with db_session(client) as session:
        graphs = await dataplane.pipelines_for_route(session=session, gateway_route_id=route_id)
        assert len(graphs) == 1
        graph = graphs[0]
        assert graph.pipeline_id == pipeline_id
        assert graph.account_id == account.account_id
        assert [node.id for node in graph.nodes] == [source_id, filter_id, sink]
        assert [node.id for node in graph.sources_for(route_id)] == [source_id]
        revisions = await dataplane.pipeline_revisions_for_route(
            session=session, gateway_route_id=route_id
        )
        assert revisions == {pipeline_id: graph.revision}
        assert await dataplane.pipelines_for_route(session=session, gateway_route_id="nope") == []
